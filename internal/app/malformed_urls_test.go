package app

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/internal/config"
)

// loadAndRun is WorkerMain's path, cancellable: a LoadWorker error is
// exit 2, and so is a RunWorker error matching ErrBadConfig. It returns
// whether the worker refused the configuration as bad (exit 2), and what
// RunWorker said otherwise.
func loadAndRun(t *testing.T, env map[string]string) (bad bool, logs string, err error) {
	t.Helper()
	env["AGENTFLEET_METRICS_ADDR"] = ""
	env["AGENTFLEET_LOG_LEVEL"] = "warn"
	cfg, err := config.LoadWorker([]string{"--name", "w-malformed-urls"}, func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}, io.Discard)
	if err != nil {
		return true, "", err
	}
	var out bytes.Buffer
	// The bound only ends a worker that retries for ever (the defect); a
	// fixed one refuses at once.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = RunWorker(ctx, cfg, func(string) string { return "" }, &out)
	return errors.Is(err, ErrBadConfig), out.String(), err
}

// Regression (found in review, eighteenth session): a nats.url that
// cannot parse (a typo in the port) or names a port out of range can
// never connect, but the worker took it for a NATS server that is down
// and retried for ever ("NATS not reachable; retrying"): it never served
// /healthz or /readyz, never exited 2, and the deploy hung with a
// misleading log line (a missing credentials file is refused this way
// since the seventeenth session).
func TestMalformedNATSURLIsBadConfig(t *testing.T) {
	for _, u := range []string{"nats://127.0.0.1:42x22", "nats://127.0.0.1:99999"} {
		bad, logs, err := loadAndRun(t, map[string]string{"AGENTFLEET_NATS_URL": u})
		if !bad {
			t.Errorf("nats.url %q: RunWorker returned %v after retrying, want a bad-configuration error (exit 2); log:\n%s",
				u, err, lastLines(logs, 2))
		}
	}
}

// Regression (found in review, eighteenth session): a redis.url that
// cannot parse (no scheme, a typo in the port) was refused, but as exit 1,
// the code of a failure a restart may fix, not 2 (bad configuration), so a
// supervisor restarted it for ever.
func TestMalformedRedisURLIsBadConfig(t *testing.T) {
	for _, u := range []string{"localhost:6379", "redis://127.0.0.1:63x79/0"} {
		bad, _, err := loadAndRun(t, map[string]string{
			"AGENTFLEET_EMBEDDED_ENABLED": "true", "AGENTFLEET_EMBEDDED_PORT": "-1",
			"AGENTFLEET_EMBEDDED_DATA_DIR": t.TempDir(), "AGENTFLEET_REDIS_URL": u,
		})
		if !bad {
			t.Errorf("redis.url %q: RunWorker returned %v, want a bad-configuration error (exit 2)", u, err)
		}
	}
}

// Regression (found in review, eighteenth session): the connection
// helpers refuse a URL that can never connect as bad configuration too,
// at once, for a caller that did not validate its configuration.
func TestConnectHelpersRefuseMalformedURLs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := ConnectNATSWithRetry(ctx, config.NATS{URL: "nats://127.0.0.1:42x22"}, "t", zerolog.Nop()); !errors.Is(err, ErrBadConfig) || ctx.Err() != nil {
		t.Errorf("ConnectNATSWithRetry(malformed) = %v (context %v), want a bad-configuration error at once", err, ctx.Err())
	}
	if _, err := ConnectRedis(ctx, config.Redis{URL: "localhost:6379"}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("ConnectRedis(no scheme) = %v, want a bad-configuration error", err)
	}
}
