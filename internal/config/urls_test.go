package config_test

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/config"
)

// CheckNATSURL accepts every form nats.go connects with and refuses the
// ones it can never connect with (found in review, eighteenth session: a
// worker retried those for ever), without a secret in its error.
func TestCheckNATSURL(t *testing.T) {
	for _, u := range []string{
		"nats://127.0.0.1:4222", "127.0.0.1:4222", "localhost", "nats://x",
		"nats://a:4222,nats://b:4222", "nats://a:4222, b:4222 ,", "nats://user:pass@host:4222",
		"TOKEN@host:4222", "tls://h:4443", "ws://h", "wss://h:443,wss://h2", "nats://[::1]:4222",
		"NATS://H:4222", "nats://h:65535", "nats://h:1", "tcp://h:4222", "nats://:4222", ":4222",
	} {
		if err := config.CheckNATSURL(u); err != nil {
			t.Errorf("CheckNATSURL(%q) = %v, want nil: nats.go connects with it", u, err)
		}
	}
	for _, u := range []string{
		"nats://127.0.0.1:42x22", "nats://127.0.0.1:99999", "nats://h:0", "127.0.0.1:42x22",
		"http://h:4222", "redis://h:6379", "ws://a,nats://b", " , ",
		"nats://a:4222,nats://b:99999",
	} {
		if err := config.CheckNATSURL(u); err == nil {
			t.Errorf("CheckNATSURL(%q) = nil, want an error: nats.go can never connect with it", u)
		}
	}
	for _, u := range []string{"nats://user:s3cret@h:99999", "nats://user:s3cret@h:42x22", "s3cret@h:42x22"} {
		if err := config.CheckNATSURL(u); err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("CheckNATSURL(%q) = %v, want an error without the secret", u, err)
		}
	}
}

// CheckRedisURL accepts what go-redis connects with and refuses the rest
// (found in review, eighteenth session: the worker exited 1, for a restart,
// instead of 2), without a secret in its error.
func TestCheckRedisURL(t *testing.T) {
	for _, u := range []string{
		"redis://127.0.0.1:6379/0", "redis://h", "rediss://u:p@h:6380", "unix:///tmp/redis.sock",
		"redis://u:p%40ss@h:6379/2?dial_timeout=3s",
	} {
		if err := config.CheckRedisURL(u); err != nil {
			t.Errorf("CheckRedisURL(%q) = %v, want nil", u, err)
		}
	}
	for _, u := range []string{
		"localhost:6379", "redis://127.0.0.1:63x79/0", "redis://h:70000", "redis://h/0/1",
		"http://h:6379", "redis://h:6379/?no_such_option=1",
	} {
		if err := config.CheckRedisURL(u); err == nil {
			t.Errorf("CheckRedisURL(%q) = nil, want an error", u)
		}
	}
	for _, u := range []string{"redis://u:s3cret@h:63x79/0", "redis://u:s3cret@h:99999/0", "redis://app:90210#s3cret@h/0"} {
		if err := config.CheckRedisURL(u); err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("CheckRedisURL(%q) = %v: the secret is in the error", u, err)
		}
	}
}

// A malformed nats.url or redis.url fails Validate, naming the key, for
// the worker and the dlq-replayer alike; embedded mode (no URL) does not.
func TestValidateRefusesMalformedURLs(t *testing.T) {
	w := config.DefaultWorker()
	w.Embedded.Enabled = true
	if err := w.Validate(); err != nil {
		t.Fatalf("embedded mode: Validate = %v", err)
	}
	w.Embedded.Enabled = false
	w.NATS.URL = "nats://127.0.0.1:42x22"
	w.Redis.URL = "localhost:6379"
	err := w.Validate()
	if err == nil || !strings.Contains(err.Error(), "nats.url") || !strings.Contains(err.Error(), "redis.url") {
		t.Errorf("worker: Validate = %v, want errors naming nats.url and redis.url", err)
	}
	r := config.DefaultReplayer()
	if err := r.Validate(); err != nil {
		t.Fatalf("replayer defaults: Validate = %v", err)
	}
	r.NATS.URL, r.Redis.URL = "nats://127.0.0.1:99999", "redis://h:63x79"
	err = r.Validate()
	if err == nil || !strings.Contains(err.Error(), "nats.url") || !strings.Contains(err.Error(), "redis.url") {
		t.Errorf("replayer: Validate = %v, want errors naming nats.url and redis.url", err)
	}
}

// RedactNATSURL hides a token (a user name without a password) in every
// server of a nats.url, whatever its scheme: nats.go sends it as the
// CONNECT auth token for every scheme CheckNATSURL accepts. The host and
// the scheme are kept.
func TestRedactNATSURLHidesTokensWhateverTheScheme(t *testing.T) {
	const tok = "s3cr3t-tok"
	for _, in := range []string{
		"tcp://" + tok + "@h:4222", "TCP://" + tok + "@h:4222", "foo://" + tok + "@h:4222",
		"nats://" + tok + "@h:4222", tok + "@h:4222", "nats://a@h1:4222,foo://" + tok + "@h2:4222",
		"foo://u:" + tok + "@h:4222",
	} {
		got := config.RedactNATSURL(in)
		if strings.Contains(got, tok) {
			t.Errorf("RedactNATSURL(%q) = %q: the token is kept", in, got)
		}
		if !strings.Contains(got, "@h") {
			t.Errorf("RedactNATSURL(%q) = %q: the host is gone", in, got)
		}
	}
	if got := config.RedactNATSURL("foo://h:4222,nats://h2:4222"); got != "foo://h:4222,nats://h2:4222" {
		t.Errorf("RedactNATSURL changed a URL without user info: %q", got)
	}
}
