package app

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/natstest"
)

// Regression (found in review, seventeenth session): A NATS credentials, nkey or CA file that does not exist is a
// configuration mistake: no retry can fix it. The worker retries it for
// ever instead ("NATS not reachable; retrying"), so a deploy with a typo in
// the secret's mount path hangs un-ready with a misleading log line, and
// never exits 2 as cmd/worker documents for bad configuration.
func TestMissingNATSCredentialFileIsBadConfig(t *testing.T) {
	srv := natstest.RunServer(t)
	missing := filepath.Join(t.TempDir(), "no-such-file")
	for _, tc := range []struct{ name, env string }{
		{"creds_file", "AGENTFLEET_NATS_CREDS_FILE"},
		{"nkey_file", "AGENTFLEET_NATS_NKEY_FILE"},
		{"tls.ca_file", "AGENTFLEET_NATS_TLS_CA_FILE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// WorkerMain's path, cancellable: a LoadWorker error is exit 2,
			// and so is a RunWorker error matching ErrBadConfig.
			env := map[string]string{"AGENTFLEET_METRICS_ADDR": "", "AGENTFLEET_NATS_URL": srv.ClientURL()}
			env[tc.env] = missing
			logs, loaded, err := runWorkerWithEnv(t, env, "w-review-creds", 10*time.Second)
			if !loaded {
				return // refused as bad configuration: exit 2
			}
			if !errors.Is(err, ErrBadConfig) {
				t.Errorf("%s names a missing file: RunWorker returned %v after retrying, want a bad-configuration error (exit 2); log:\n%s",
					tc.env, err, lastLines(logs, 2))
			}
		})
	}
}

// Regression (found in review, seventeenth session): embedded.port outside -1..65535 is a configuration mistake. The worker
// waits 15 s for a server that can never listen, then exits 1 with "is the
// port taken?", which a supervisor restarts for ever.
func TestEmbeddedPortOutOfRangeExitsTwo(t *testing.T) {
	t.Setenv("AGENTFLEET_METRICS_ADDR", "")
	for _, port := range []string{"70000", "-5"} {
		t.Run(port, func(t *testing.T) {
			t.Setenv("AGENTFLEET_EMBEDDED_PORT", port)
			var out, errOut bytes.Buffer
			done := make(chan int, 1)
			go func() {
				done <- WorkerMain([]string{"--embedded", "--data-dir", t.TempDir(), "--log-level", "error"}, &out, &errOut)
			}()
			select {
			case code := <-done:
				if code != 2 {
					t.Errorf("embedded.port %s: exit code %d, want 2 (bad configuration); stderr: %s", port, code, errOut.String())
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("embedded.port %s: the worker started and ran", port)
			}
		})
	}
}

// Regression (found in review, seventeenth session): A metrics_addr that is not host:port (a bare "9090") is bad
// configuration: exit 2, like every other key that does not validate, not 1.
func TestMalformedMetricsAddrExitsTwo(t *testing.T) {
	t.Setenv("AGENTFLEET_EMBEDDED_PORT", "-1")
	t.Setenv("AGENTFLEET_METRICS_ADDR", "9090")
	var out, errOut bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- WorkerMain([]string{"--embedded", "--data-dir", t.TempDir(), "--log-level", "error"}, &out, &errOut)
	}()
	select {
	case code := <-done:
		if code != 2 {
			t.Errorf("metrics_addr 9090: exit code %d, want 2 (bad configuration); stderr: %s", code, errOut.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("metrics_addr 9090: the worker started and ran")
	}
}

func lastLines(s string, n int) string {
	b := []byte(s)
	for i := len(b) - 2; i >= 0; i-- {
		if b[i] == '\n' {
			n--
			if n == 0 {
				return string(b[i+1:])
			}
		}
	}
	return s
}

// Regression (found in review, seventeenth session): streams.replicas 3 against a server that is not clustered (the embedded
// one always; a single nats-server) can never start: JetStream answers
// "replicas > 1 not supported in non-clustered mode". It is a configuration
// the live server refuses, like a subject prefix the live stream does not
// have (exit 2, TestLiveConfigurationRefusalsExitTwo), but the worker exits
// 1, which a supervisor restarts for ever.
func TestReplicasOnUnclusteredServerExitsTwo(t *testing.T) {
	t.Setenv("AGENTFLEET_METRICS_ADDR", "")
	t.Setenv("AGENTFLEET_STREAMS_REPLICAS", "3")
	t.Setenv("AGENTFLEET_LOG_LEVEL", "error")
	srv := natstest.RunServer(t)
	for _, tc := range []struct {
		name string
		args func(t *testing.T) []string
	}{
		{"embedded", func(t *testing.T) []string {
			t.Setenv("AGENTFLEET_EMBEDDED_PORT", "-1")
			return []string{"--embedded", "--data-dir", t.TempDir()}
		}},
		{"single server", func(t *testing.T) []string { return []string{"--nats-url", srv.ClientURL()} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			done := make(chan int, 1)
			args := tc.args(t)
			go func() { done <- WorkerMain(args, &out, &errOut) }()
			select {
			case code := <-done:
				if code != 2 {
					t.Errorf("streams.replicas 3 on an unclustered server: exit code %d, want 2 (bad configuration); stderr: %s", code, errOut.String())
				}
			case <-time.After(60 * time.Second):
				t.Fatal("the worker started and ran")
			}
		})
	}
}

// runWorkerWithEnv loads the worker's configuration from env (flags
// --name name) and, when it loads, runs the worker for at most bound (the
// bound only ends a worker that retries for ever; a refusal comes at
// once). It returns its log, whether the
// configuration loaded (a LoadWorker error is a refusal: exit 2), and RunWorker's error.
func runWorkerWithEnv(t *testing.T, env map[string]string, name string, bound time.Duration) (string, bool, error) {
	t.Helper()
	cfg, err := config.LoadWorker([]string{"--name", name}, func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}, io.Discard)
	if err != nil {
		return "", false, err
	}
	var logs bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	err = RunWorker(ctx, cfg, func(string) string { return "" }, &logs)
	return logs.String(), true, err
}
