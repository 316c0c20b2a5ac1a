package app

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// The worker never prints a secret it was given: NATS and Redis URLs go
// through config.RedactURL / RedactConnectError in every log line and
// error. model.openai_base_url is a URL too (an OpenAI-compatible server
// behind basic auth: http://user:password@host/v1), but a base URL that
// does not parse (here a typo in the port) was printed verbatim, password
// included, in the worker's fatal error on stderr; it is redacted now.
func TestOpenAIBaseURLPasswordNotPrinted(t *testing.T) {
	t.Setenv("AGENTFLEET_EMBEDDED_PORT", "-1")
	t.Setenv("AGENTFLEET_METRICS_ADDR", "")
	t.Setenv("OPENAI_API_KEY", "")
	const secret = "s3cr3t-basic-auth"
	var out, errOut bytes.Buffer
	done := make(chan int, 1)
	args := []string{"--embedded", "--data-dir", t.TempDir(), "--model", "openai:llama3",
		"--openai-base-url", "http://vllm:" + secret + "@127.0.0.1:8000x/v1"}
	go func() { done <- WorkerMain(args, &out, &errOut) }()
	select {
	case code := <-done:
		if code == 0 {
			t.Fatalf("exit 0 with an unparsable base URL")
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the worker started with an unparsable base URL")
	}
	if strings.Contains(errOut.String()+out.String(), secret) {
		t.Errorf("the base URL's password is printed:\n%s", errOut.String())
	}
}
