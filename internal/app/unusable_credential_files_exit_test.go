package app

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/redistest"
)

// Regression (found in review, twentieth session): the seventeenth
// session made a NATS credential or TLS file that cannot be OPENED bad
// configuration (exit 2), but one that opened and held garbage (a CA
// bundle that is not PEM, an nkey file that holds no seed: a secret
// mounted from the wrong key) failed every connect attempt the same way,
// and ConnectNATSWithRetry retried it for ever, logging "NATS not
// reachable; retrying": the worker was never ready and never exited 2.
// LoadWorker (Validate) now refuses it; the test also accepts RunWorker
// returning ErrBadConfig (ConnectNATS's own guard).
func TestMalformedNATSFileIsBadConfig(t *testing.T) {
	srv := natstest.RunServer(t)
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	if err := os.WriteFile(garbage, []byte("this is not a certificate nor a seed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, env string }{
		{"nkey_file", "AGENTFLEET_NATS_NKEY_FILE"},
		{"tls.ca_file", "AGENTFLEET_NATS_TLS_CA_FILE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"AGENTFLEET_METRICS_ADDR": "", "AGENTFLEET_NATS_URL": srv.ClientURL(), tc.env: garbage}
			logs, loaded, err := runWorkerWithEnv(t, env, "w-malformed-nats-file", 8*time.Second)
			if !loaded {
				return // refused as bad configuration: exit 2
			}
			if !errors.Is(err, ErrBadConfig) {
				t.Errorf("%s names a file that holds no key/certificate: RunWorker returned %v, want a bad-configuration error (exit 2); log:\n%s",
					tc.env, err, lastLines(logs, 2))
			}
		})
	}
}

// Regression (found in review, twentieth session): redis.tls.* files were
// never checked by Validate (checkFiles covered nats.tls only), and
// ConnectRedis returned tlsConfig's error unwrapped: a missing or non-PEM
// redis.tls.ca_file exited 1 (a restart loop under a supervisor) instead
// of 2, and the message ("tls: ca file: open ...") did not name the key
// redis.tls.ca_file.
func TestRedisTLSFileIsBadConfig(t *testing.T) {
	srv := natstest.RunServer(t)
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not pem\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, path string }{
		{"missing", filepath.Join(dir, "no-such-ca.pem")},
		{"not pem", garbage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("AGENTFLEET_METRICS_ADDR", "")
			t.Setenv("AGENTFLEET_LOG_LEVEL", "error")
			t.Setenv("AGENTFLEET_REDIS_URL", redistest.URL())
			t.Setenv("AGENTFLEET_REDIS_PREFIX", redistest.Prefix(t))
			t.Setenv("AGENTFLEET_REDIS_TLS_CA_FILE", tc.path)
			var out, errOut bytes.Buffer
			done := make(chan int, 1)
			go func() {
				done <- WorkerMain([]string{"--nats-url", srv.ClientURL(), "--name", "w-redis-tls-file"}, &out, &errOut)
			}()
			select {
			case code := <-done:
				if code != 2 {
					t.Errorf("redis.tls.ca_file %s: exit code %d, want 2 (bad configuration); stderr: %s", tc.name, code, errOut.String())
				}
				if !bytes.Contains(errOut.Bytes(), []byte("redis.tls.ca_file")) {
					t.Errorf("redis.tls.ca_file %s: the error does not name the key; stderr: %s", tc.name, errOut.String())
				}
			case <-time.After(60 * time.Second):
				t.Fatal("the worker started and ran")
			}
		})
	}
}

// Regression (found in review, twentieth session): the connect helpers do
// not rely on Validate. ConnectNATSWithRetry with a file that cannot be
// used returns an error matching ErrBadConfig at once instead of retrying
// for ever, and ConnectRedis names redis.tls.ca_file with ErrBadConfig
// (it returned tlsConfig's bare error: exit 1).
func TestConnectHelpersRefuseUnusableFilesAtOnce(t *testing.T) {
	srv := natstest.RunServer(t)
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	if err := os.WriteFile(garbage, []byte("this is not a certificate nor a seed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key string
		cfg config.NATS
	}{
		{"nats.nkey_file", config.NATS{URL: srv.ClientURL(), NKeyFile: garbage}},
		{"nats.creds_file", config.NATS{URL: srv.ClientURL(), CredsFile: garbage}},
		{"nats.tls.ca_file", config.NATS{URL: srv.ClientURL(), TLS: config.TLS{CAFile: garbage}}},
		{"nats.tls.cert_file", config.NATS{URL: srv.ClientURL(), TLS: config.TLS{CertFile: garbage, KeyFile: garbage}}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		nc, err := ConnectNATSWithRetry(ctx, tc.cfg, "w-connect-unusable-files", zerolog.Nop())
		cancel()
		if nc != nil {
			nc.Close()
		}
		if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), tc.key) || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: ConnectNATSWithRetry returned %v after %v, want a bad-configuration error naming the key at once", tc.key, err, time.Since(start))
		}
	}
	_, err := ConnectRedis(context.Background(), config.Redis{URL: redistest.URL(), TLS: config.TLS{CAFile: garbage}})
	if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), "redis.tls.ca_file") {
		t.Errorf("ConnectRedis with a non-PEM redis.tls.ca_file: %v, want a bad-configuration error naming redis.tls.ca_file", err)
	}
}
