package config

import (
	"fmt"
	"net"
)

// CheckMetricsAddr reports why a (metrics_addr, or a command's
// --metrics-addr) is not an address to serve /metrics, /healthz and
// /readyz on: want host:port or :port, the port a number from 0 to 65535
// or a service name; empty disables the endpoints and is fine. Such an
// address would fail only in net.Listen, after connecting to everything,
// with the exit code of an outage. The error names metrics_addr.
func CheckMetricsAddr(a string) error {
	if a == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(a)
	if err != nil {
		return fmt.Errorf("metrics_addr %q: want host:port or :port (%v); empty disables it", a, err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("metrics_addr %q: the port must be a number from 0 to 65535 or a service name (%v)", a, err)
	}
	return nil
}

// checkRedisTLS reports the redis.tls files that cannot be used (see
// TLS.checkFiles) when Redis is used at all (redis.url set): ConnectRedis
// would fail on each of them on every start.
func checkRedisTLS(r Redis) []error {
	if r.URL == "" {
		return nil
	}
	return r.TLS.checkFiles("redis.tls")
}
