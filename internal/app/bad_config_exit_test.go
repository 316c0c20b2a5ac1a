package app

import (
	"bytes"
	"testing"
	"time"
)

// cmd/worker documents exit code 2 for bad flags or configuration and 1 for
// an error (WorkerMain; TestWorkerMainExitCodes holds a model spec that
// cannot work to 2). A configuration value that the stream topology or the
// retry decorator cannot run with is just as much bad configuration, but
// config.Validate let it through and StartWorker failed on it after the
// embedded server started: exit 1, which a supervisor restarts forever
// instead of reporting a broken configuration (now CheckDerived, and the
// providers' configuration errors match ErrBadConfig).
func TestBadStreamOrRetryConfigExitsTwo(t *testing.T) {
	t.Setenv("AGENTFLEET_EMBEDDED_PORT", "-1")
	t.Setenv("AGENTFLEET_METRICS_ADDR", "")
	for _, tc := range []struct {
		name, env, val string
		args           []string
	}{
		{"replicas 6", "AGENTFLEET_STREAMS_REPLICAS", "6", nil},
		{"retry initial above max", "AGENTFLEET_MODEL_RETRY_INITIAL", "10s", nil},
		{"results stream named like requests", "AGENTFLEET_STREAMS_RESULTS", "AGENT_REQUESTS", nil},
		// An Ollama address without its scheme (openai_base_url).
		{"openai base URL without a scheme", "AGENTFLEET_MODEL_OPENAI_BASE_URL", "localhost:11434/v1", []string{"--model", "openai:llama3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(tc.env, tc.val)
			var out, errOut bytes.Buffer
			done := make(chan int, 1)
			args := append([]string{"--embedded", "--data-dir", t.TempDir()}, tc.args...)
			go func() { done <- WorkerMain(args, &out, &errOut) }()
			select {
			case code := <-done:
				if code != 2 {
					t.Errorf("%s=%s: exit code %d, want 2 (bad configuration); stderr: %s", tc.env, tc.val, code, errOut.String())
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("%s=%s: the worker started and ran", tc.env, tc.val)
			}
		})
	}
}
