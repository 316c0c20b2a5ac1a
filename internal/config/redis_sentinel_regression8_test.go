package config_test

import (
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/config"
)

// TestWorkerAcceptsRedisSentinelURL: Regression (found in review,
// twenty-fifth session): README "Beyond one machine" tells the operator to
// run Redis as a primary with replicas under Sentinel, and says a lost
// primary means workers Nak until a replica is promoted, but redis.url was
// read with redis.ParseURL only, which refuses go-redis's Sentinel form
// ("redis: unexpected option: master_name", exit 2): a worker had to be
// given the primary's address and never followed a failover. A URL whose
// query sets master_name is now go-redis's Sentinel form
// (config.ParseRedisURL, redis.ParseFailoverURL); any other URL is still
// one server.
func TestWorkerAcceptsRedisSentinelURL(t *testing.T) {
	noEnv := func(string) (string, bool) { return "", false }
	url := "redis://127.0.0.1:26379/0?master_name=mymaster&addr=127.0.0.1:26380"
	if _, err := config.LoadWorker([]string{"--nats-url", "nats://127.0.0.1:4222", "--redis-url", url}, noEnv, io.Discard); err != nil {
		t.Fatalf("a Sentinel redis.url (go-redis's failover URL form), the deployment README \"Beyond one machine\" recommends, is refused: %v", err)
	}

	single, failover, err := config.ParseRedisURL("rediss://sentinel-user:s3ntinel@s1:26379/3?master_name=mymaster&addr=s2:26379&addr=s3:26379&username=app&password=pr1mary&dial_timeout=2s")
	if err != nil {
		t.Fatal(err)
	}
	if single != nil || failover == nil {
		t.Fatalf("a Sentinel URL parsed as one server (%v) or not as Sentinel (%v)", single, failover)
	}
	if failover.MasterName != "mymaster" || failover.DB != 3 ||
		!reflect.DeepEqual(failover.SentinelAddrs, []string{"s1:26379", "s2:26379", "s3:26379"}) {
		t.Errorf("Sentinel URL: master %q db %d sentinels %v, want mymaster, 3, [s1:26379 s2:26379 s3:26379]",
			failover.MasterName, failover.DB, failover.SentinelAddrs)
	}
	if failover.SentinelUsername != "sentinel-user" || failover.SentinelPassword != "s3ntinel" ||
		failover.Username != "app" || failover.Password != "pr1mary" {
		t.Errorf("Sentinel URL credentials: sentinels %q/%q, primary %q/%q: want the user info for the Sentinels and username=, password= for the primary",
			failover.SentinelUsername, failover.SentinelPassword, failover.Username, failover.Password)
	}
	if failover.TLSConfig == nil {
		t.Error("rediss:// Sentinel URL without TLS")
	}

	single, failover, err = config.ParseRedisURL("redis://127.0.0.1:6379/5")
	if err != nil || single == nil || failover != nil || single.DB != 5 {
		t.Fatalf("a plain URL: single %v failover %v err %v, want one server on db 5", single, failover, err)
	}
}

// TestRedisSentinelURLRefusals: Regression (found in review, twenty-fifth
// session, with the Sentinel form): a Sentinel URL that could never give
// the stores a primary to write to is bad configuration at load (exit 2),
// not a Redis that is down: no master name, routing go-redis's failover
// client panics on (it needs a cluster client), every command on a replica,
// a Sentinel port out of range, a scheme the Sentinel form has not.
func TestRedisSentinelURLRefusals(t *testing.T) {
	noEnv := func(string) (string, bool) { return "", false }
	for _, c := range []struct{ url, want string }{
		{"redis://s1:26379/0?master_name=", "master_name is empty"},
		{"redis://s1:26379/0?master_name=m&route_randomly=true", "route_by_latency and route_randomly"},
		{"redis://s1:26379/0?master_name=m&route_by_latency=true", "route_by_latency and route_randomly"},
		{"redis://s1:26379/0?master_name=m&replica_only=true", "replica_only"},
		{"redis://s1:26379/0?master_name=m&addr=s2:65536", "port out of range"},
		{"redis://s1:0/0?master_name=m", "port out of range"},
		{"redis://s1:26379/0?master_name=m&addr=s2", "unable to parse addr"},
		{"unix:///run/redis.sock?master_name=m", "invalid URL scheme"},
		{"redis://s1:26379/0?master_name=m&sentinel_password=x", "unexpected option"},
	} {
		err := config.CheckRedisURL(c.url)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckRedisURL(%q) = %v, want an error saying %q", c.url, err, c.want)
		}
		if _, err := config.LoadWorker([]string{"--nats-url", "nats://127.0.0.1:4222", "--redis-url", c.url}, noEnv, io.Discard); err == nil ||
			!strings.Contains(err.Error(), "redis.url") {
			t.Errorf("LoadWorker with redis.url %q = %v, want an error naming redis.url", c.url, err)
		}
	}
}

// TestRedisSentinelURLPasswordRedacted: Regression (found in review,
// twenty-fifth session, with the Sentinel form): go-redis reads the
// primary's password of a Sentinel URL from its query (password=), where
// RedactURL did not look. No piece of it, nor of the Sentinels' password
// in the user info, shows in RedactURL, in Worker.Redacted or in the
// errors of a URL that is refused, also when the password holds an
// unescaped '&' or '#' (url.Parse cuts it there) or the option's name is
// %-encoded.
func TestRedisSentinelURLPasswordRedacted(t *testing.T) {
	noEnv := func(string) (string, bool) { return "", false }
	for _, url := range []string{
		"redis://s1:26379/0?master_name=m&password=Kq7pr1mary&addr=s2:26379",
		"redis://user:Kq7sent1nel@s1:26379/0?master_name=m&password=Kq7pr1mary",
		"redis://s1:26379/0?master_name=m&p%61ssword=Kq7pr1mary&bogus=1",
		"redis://s1:26379/0?master_name=m&password=Kq7pr1&mary&addr=s2:26379",
		"redis://s1:26379/0?master_name=m&password=Kq7pr1#mary",
		"redis://s1:26379/0?master_name=&PASSWORD=Kq7pr1mary",
		"redis://s1:26379/0?master_name=m&sentinel_password=Kq7pr1mary",
		"redis://s1:99999/0?master_name=m&password=Kq7pr1mary",
	} {
		for _, secret := range []string{"Kq7", "mary", "sent1nel"} {
			if got := config.RedactURL(url); strings.Contains(got, secret) {
				t.Errorf("RedactURL(%q) = %q: %q survives", url, got, secret)
			}
			w := config.DefaultWorker()
			w.Redis.URL = url
			if got := w.Redacted().Redis.URL; strings.Contains(got, secret) {
				t.Errorf("Worker.Redacted redis.url %q = %q: %q survives", url, got, secret)
			}
			if err := config.CheckRedisURL(url); err != nil && strings.Contains(err.Error(), secret) {
				t.Errorf("CheckRedisURL(%q) = %v: %q survives", url, err, secret)
			}
			if _, err := config.LoadWorker([]string{"--nats-url", "nats://127.0.0.1:4222", "--redis-url", url}, noEnv, io.Discard); err != nil &&
				strings.Contains(err.Error(), secret) {
				t.Errorf("LoadWorker with redis.url %q = %v: %q survives", url, err, secret)
			}
		}
	}
	// The other options stay readable: an operator needs the master name
	// and the Sentinels.
	if got, want := config.RedactURL("redis://s1:26379/0?master_name=m&password=x1&addr=s2:26379"),
		"redis://s1:26379/0?master_name=m&password=REDACTED&addr=s2:26379"; got != want {
		t.Errorf("RedactURL = %q, want %q", got, want)
	}
}
