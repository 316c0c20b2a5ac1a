package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// CheckNATSURL reports why nats.go could never connect with s (nats.url:
// a server URL or a comma-separated list of them), read as nats.go reads
// it: each server trimmed of spaces, empty ones skipped, nats:// put
// before one without a scheme. Each must parse as a URL whose scheme is
// not another protocol's (http, redis, ...: nats.go dials any scheme but
// tls, ws and wss as plain TCP, so "tcp://h:4222" and an empty host are
// fine) with a port from 1 to 65535 when it names one (nats.go adds the
// default when it does not); websocket servers and the others do not mix
// (nats.go refuses the list), and a list must name a server (nats.go would
// dial its default, 127.0.0.1:4222, instead).
//
// Connecting with such a URL fails on every try, so a worker that took it
// for a NATS server that is down would retry for ever, never ready and
// never saying why: it is bad configuration (found in review, eighteenth
// session). The URLs in the errors are redacted (RedactNATSURL).
func CheckNATSURL(s string) error {
	var errs []error
	servers, ws := 0, 0
	// Each server is shown as the whole list's redaction shows it: a
	// password cut by a comma is a secret only the whole list tells apart
	// (found in review of this session's fix, twenty-second session).
	shown := strings.Split(RedactNATSURL(s), ",")
	for i, part := range strings.Split(s, ",") {
		p := strings.TrimSpace(part)
		if p == "" {
			continue
		}
		red := redacted
		if len(shown) == len(strings.Split(s, ",")) {
			red = strings.TrimSpace(shown[i])
		}
		servers++
		full := p
		if !strings.Contains(p, "://") {
			full = "nats://" + p
		}
		u, err := url.Parse(full)
		if err != nil {
			errs = append(errs, fmt.Errorf("server %s: %w", red, RedactConnectError(err, p)))
			continue
		}
		if foreignScheme(u.Scheme) {
			errs = append(errs, fmt.Errorf("server %s: scheme %q is another protocol's (nats.go would speak NATS to it): want nats, tls, ws, wss or none (nats://)", red, u.Scheme))
			continue
		}
		if u.Scheme == "ws" || u.Scheme == "wss" {
			ws++
		}
		if err := checkPort(u.Port()); err != nil {
			errs = append(errs, fmt.Errorf("server %s: %w", red, err))
		}
	}
	switch {
	case servers == 0:
		errs = append(errs, errors.New("names no server"))
	case ws > 0 && ws < servers:
		errs = append(errs, errors.New("mixes websocket (ws, wss) and other servers, which nats.go refuses"))
	}
	return errors.Join(errs...)
}

// foreignScheme reports a scheme of another protocol, a pasted URL of
// another service: nats.go reads a scheme only to choose TLS or websocket
// and dials any other as plain TCP ("tcp://nats:4222" works, and so does
// an empty host, the local machine), so only these are refused.
func foreignScheme(scheme string) bool {
	switch strings.ToLower(scheme) {
	case "http", "https", "redis", "rediss", "unix", "postgres", "postgresql", "amqp", "amqps", "mqtt":
		return true
	}
	return false
}

// CheckRedisURL reports why s (redis.url) can never connect: go-redis
// cannot parse it (ParseRedisURL: no or another scheme than redis, rediss
// or unix, a typo in the port, an unknown option), a port is outside 1 to
// 65535, or a Sentinel URL names no primary or asks for routing the
// worker's client cannot do. As for CheckNATSURL, that is bad
// configuration, not a Redis that is down. The URL in the error is
// redacted.
func CheckRedisURL(s string) error {
	_, _, err := ParseRedisURL(s)
	return err
}

// ParseRedisURL parses s (redis.url) as the worker's client reads it, and
// reports what CheckRedisURL reports. A URL whose query sets master_name
// is go-redis's Sentinel form (redis.ParseFailoverURL), returned as
// failover: its host and every addr= option are Sentinels (redis://
// s1:26379/0?master_name=mymaster&addr=s2:26379&addr=s3:26379), its user
// info is the Sentinels' credentials, and username= and password= options
// are the primary's (redis.username and redis.password set those too);
// the client asks the Sentinels for the current primary, again after a
// failover. Any other URL is one server (redis.ParseURL), returned as
// single. Exactly one of the two is non-nil when err is nil.
//
// A Sentinel URL must name the primary (a non-empty master_name), and may
// not set route_by_latency or route_randomly (go-redis's failover client
// panics on them: they need a cluster client) nor replica_only (every
// command would go to a replica, which refuses the stores' writes).
func ParseRedisURL(s string) (single *redis.Options, failover *redis.FailoverOptions, err error) {
	bad := func(err error) error {
		return fmt.Errorf("%s: %w", RedactURL(s), redactQueryError(RedactConnectError(err, s), s))
	}
	if !sentinelURL(s) {
		opts, err := redis.ParseURL(s)
		if err != nil {
			return nil, nil, bad(err)
		}
		if opts.Network == "tcp" {
			_, port, err := net.SplitHostPort(opts.Addr)
			if err == nil {
				err = checkPort(port)
			}
			if err != nil {
				return nil, nil, bad(err)
			}
		}
		return opts, nil, nil
	}
	fo, err := redis.ParseFailoverURL(s)
	if err != nil {
		return nil, nil, bad(err)
	}
	var errs []error
	if fo.MasterName == "" {
		errs = append(errs, errors.New("master_name is empty: name the primary the Sentinels monitor"))
	}
	if fo.RouteByLatency || fo.RouteRandomly {
		errs = append(errs, errors.New("route_by_latency and route_randomly need a Redis Cluster client, which the fleet does not use"))
	}
	if fo.ReplicaOnly {
		errs = append(errs, errors.New("replica_only sends every command to a replica, which refuses the stores' writes"))
	}
	for _, addr := range fo.SentinelAddrs {
		_, port, err := net.SplitHostPort(addr)
		if err == nil {
			err = checkPort(port)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("sentinel: %w", err))
			break
		}
	}
	if len(errs) > 0 {
		return nil, nil, bad(errors.Join(errs...))
	}
	return nil, fo, nil
}

// sentinelURL reports whether s is go-redis's Sentinel URL form: a URL
// whose query sets master_name (even to nothing, which ParseRedisURL
// refuses). One that does not parse is not: redis.ParseURL reports it.
func sentinelURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Query().Has("master_name")
}

// checkPort reports a port that is named (not empty) and is not a number
// from 1 to 65535. The error does not quote it: a password holding '#' or
// '?' can make url.Parse read its start as the port (the callers print the
// URL through RedactURL, which knows).
func checkPort(port string) error {
	if port == "" {
		return nil
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return errors.New("port out of range: want a number from 1 to 65535")
	}
	return nil
}
