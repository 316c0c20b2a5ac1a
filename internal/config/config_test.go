package config_test

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/config"
)

func repoFile(t *testing.T, rel string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", rel)
}

func noEnv(string) (string, bool) { return "", false }

// configs/worker.yaml documents every key with its default: loading it must
// change nothing, worker.name included (the file shows it as "", which
// means hostname-pid: it loaded as "", and the worker refused to start).
func TestWorkerYAMLDocumentsTheDefaults(t *testing.T) {
	got, err := config.LoadWorker([]string{"--config", repoFile(t, "configs/worker.yaml")}, noEnv, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := config.DefaultWorker()
	want.Embedded.Enabled = true // no NATS URL
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("configs/worker.yaml differs from the defaults:\n got %+v\nwant %+v", got, want)
	}
}

func TestPrecedenceFileEnvFlags(t *testing.T) {
	env := map[string]string{
		"AGENTFLEET_NATS_URL":             "nats://env:4222",
		"AGENTFLEET_WORKER_CONCURRENCY":   "3",
		"AGENTFLEET_MODEL_SIM_FAULTS":     "server=0.4",
		"AGENTFLEET_WORKER_DRAIN_TIMEOUT": "7s",
		"AGENTFLEET_COOLDOWN_THRESHOLD":   "0.7",
		"AGENTFLEET_MODEL_SPEC":           "openai:gpt-4o-mini",
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	c, err := config.LoadWorker([]string{"--concurrency", "5", "--model", "sim"}, lookup, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.NATS.URL != "nats://env:4222" || c.Embedded.Enabled {
		t.Fatalf("env NATS URL not applied: %+v", c.NATS)
	}
	if c.Worker.Concurrency != 5 || c.Model.Spec != "sim" {
		t.Fatalf("flags must win over env: %d %s", c.Worker.Concurrency, c.Model.Spec)
	}
	if c.Model.Sim.Faults != "server=0.4" || c.Worker.DrainTimeout != 7*time.Second || c.Cooldown.Threshold != 0.7 {
		t.Fatalf("env not applied: %+v %+v", c.Model.Sim, c.Worker)
	}
}

func TestValidateRejectsInconsistentConfig(t *testing.T) {
	env := map[string]string{"AGENTFLEET_IDEMPOTENCY_RETENTION": "24h", "AGENTFLEET_NATS_URL": "nats://x"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	_, err := config.LoadWorker(nil, lookup, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "idempotency.retention") {
		t.Fatalf("retention shorter than DLQ max age accepted: %v", err)
	}
	_, err = config.LoadWorker([]string{"--model", "claude"}, noEnv, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "model.spec") {
		t.Fatalf("bad model spec accepted: %v", err)
	}
	if _, err := config.LoadWorker([]string{"--concurrency", "x"}, noEnv, io.Discard); err == nil {
		t.Fatal("bad flag accepted")
	}
	bad := map[string]string{"AGENTFLEET_WORKER_CONCURRENCY": "many"}
	if _, err := config.LoadWorker(nil, func(k string) (string, bool) { v, ok := bad[k]; return v, ok }, io.Discard); err == nil {
		t.Fatal("bad env value accepted")
	}
}

func TestUnknownYAMLKeyIsAnError(t *testing.T) {
	p := filepath.Join(t.TempDir(), "w.yaml")
	writeFile(t, p, "worker:\n  concurrancy: 4\n")
	if _, err := config.LoadWorker([]string{"--config", p}, noEnv, io.Discard); err == nil || !strings.Contains(err.Error(), "concurrancy") {
		t.Fatalf("typo not reported: %v", err)
	}
}

func TestRedacted(t *testing.T) {
	c := config.DefaultWorker()
	c.Redis.URL = "redis://user:s3cret@10.0.0.1:6379/0"
	c.Redis.Password = "s3cret"
	r := c.Redacted()
	if strings.Contains(r.Redis.URL, "s3cret") || r.Redis.Password == "s3cret" || c.Redis.Password != "s3cret" {
		t.Fatalf("redaction: %+v (original %+v)", r.Redis, c.Redis)
	}
}

func TestEveryKeyHasAnEnvName(t *testing.T) {
	c := config.DefaultWorker()
	names := config.EnvNames(&c)
	for _, want := range []string{"AGENTFLEET_NATS_URL", "AGENTFLEET_REDIS_PASSWORD", "AGENTFLEET_MODEL_RETRY_ATTEMPTS", "AGENTFLEET_COOLDOWN_WINDOW"} {
		found := false
		for _, n := range names {
			found = found || n == want
		}
		if !found {
			t.Fatalf("%s missing from %v", want, names)
		}
	}
}

// The worker's retention check also holds for a configuration file (the
// environment's case is in TestValidateRejectsInconsistentConfig).
func TestWorkerFileRetentionMustOutliveDLQ(t *testing.T) {
	p := filepath.Join(t.TempDir(), "w.yaml")
	writeFile(t, p, "nats:\n  url: nats://x\nstreams:\n  dlq_max_age: 720h\n")
	if _, err := config.LoadWorker([]string{"--config", p}, noEnv, io.Discard); err == nil || !strings.Contains(err.Error(), "idempotency.retention") {
		t.Fatalf("a 30-day DLQ with the default 15-day retention accepted: %v", err)
	}
	writeFile(t, p, "nats:\n  url: nats://x\nstreams:\n  dlq_max_age: 720h\nidempotency:\n  retention: 744h\n")
	if _, err := config.LoadWorker([]string{"--config", p}, noEnv, io.Discard); err != nil {
		t.Fatal(err)
	}
}

// RedactURL hides passwords everywhere and NATS tokens (a user name without
// a password in a NATS URL), and keeps Redis ACL user names.
func TestRedactURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"redis://:s3cret@127.0.0.1:6379/0", "redis://:REDACTED@127.0.0.1:6379/0"},
		{"nats://user:s3cret@127.0.0.1:4222", "nats://user:REDACTED@127.0.0.1:4222"},
		// A NATS user without a password is the auth token (nats.go sends it
		// as the CONNECT token), in every NATS scheme and with no scheme.
		{"nats://s3cret@127.0.0.1:4222", "nats://REDACTED@127.0.0.1:4222"},
		{"tls://s3cret@nats.example:4222", "tls://REDACTED@nats.example:4222"},
		{"ws://s3cret@nats.example:8080", "ws://REDACTED@nats.example:8080"},
		{"wss://s3cret@nats.example:443", "wss://REDACTED@nats.example:443"},
		{"NATS://s3cret@127.0.0.1:4222", "nats://REDACTED@127.0.0.1:4222"},
		{"s3cret@127.0.0.1:4222", "REDACTED@127.0.0.1:4222"},
		{"s3cret@localhost", "REDACTED@localhost"},
		{"nats://t1@h1:4222,nats://t2@h2:4222", "nats://REDACTED@h1:4222,nats://REDACTED@h2:4222"},
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
		{"127.0.0.1:4222", "127.0.0.1:4222"},
		// A Redis user without a password is the ACL user name, not a secret.
		{"redis://app@127.0.0.1:6379/0", "redis://app@127.0.0.1:6379/0"},
		{"rediss://app:s3cret@redis.example:6380/0", "rediss://app:REDACTED@redis.example:6380/0"},
		// Unparseable: the whole user info goes.
		{"redis://:s3cr%et@127.0.0.1:6379/0", "redis://REDACTED@127.0.0.1:6379/0"},
		{"nats://user:s3cret@127.0.0.1:42x2", "nats://REDACTED@127.0.0.1:42x2"},
		{"nats://a:p1@h1:4222,nats://b:p2@h2:42x2", "nats://a:REDACTED@h1:4222,nats://REDACTED@h2:42x2"},
		{"not a url %zz", "not a url %zz"},
		{"redis://:pa,ss@127.0.0.1:6379/0", "redis://:REDACTED@127.0.0.1:6379/0"}, // a comma in a password, not a list
	} {
		if got := config.RedactURL(tc.in); got != tc.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRedactURLError(t *testing.T) {
	//lint:ignore SA1007 the URL is invalid on purpose: its parse error is the input
	_, perr := url.Parse("redis://:s3cr%et@127.0.0.1:6379/0")
	err := config.RedactURLError(fmt.Errorf("redis: url: %w", perr))
	if strings.Contains(err.Error(), "s3cr") {
		t.Fatalf("the password is still in %q", err)
	}
	var ue *url.Error
	if !errors.As(err, &ue) {
		t.Fatalf("errors.As no longer finds the *url.Error in %v", err)
	}
	// A '#' in the password cuts the URL url.Parse quotes before the '@',
	// and the port error quotes the rest of the password: neither is shown.
	for _, raw := range []string{"ws://0:Kq7#@0", "nats://user:pa55?x@127.0.0.1:4222", "nats://u:s3cr\"t@h:1"} {
		_, perr := url.Parse(raw)
		if perr == nil {
			t.Fatalf("%q parses", raw)
		}
		msg := config.RedactURLError(fmt.Errorf("nats: %w", perr)).Error()
		for _, secret := range []string{"Kq7", "pa55", "s3cr"} {
			if strings.Contains(msg, secret) {
				t.Errorf("url.Parse(%q) error through RedactURLError = %q: %q survives", raw, msg, secret)
			}
		}
	}
	plain := errors.New("dial tcp: connection refused")
	if config.RedactURLError(plain) != plain {
		t.Fatal("an error without a URL was rewritten")
	}
}
