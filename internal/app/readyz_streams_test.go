package app_test

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/logtest"
	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/pkg/client"
)

// startWorkerWithReadyz starts a worker with /readyz on a free port and returns
// it with a /readyz getter.
func startWorkerWithReadyz(t *testing.T, cfg config.Worker) (*app.Running, func() (int, string)) {
	t.Helper()
	cfg.MetricsAddr = "127.0.0.1:0"
	cfg.Model.Sim.Latency = time.Millisecond
	logs := logtest.New("serving /metrics")
	ctx, cancel := context.WithCancel(context.Background())
	r, err := app.StartWorker(ctx, cfg, func(string) string { return "" }, logs)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = r.Wait() })
	logs.Wait(t, "serving /metrics")
	m := regexp.MustCompile(`"addr":"([^"]+)"`).FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no metrics address in\n%s", logs.String())
	}
	return r, func() (int, string) {
		resp, err := http.Get("http://" + m[1] + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
}

// waitNotReady polls /readyz (there is no signal to wait on: the probe is
// what an orchestrator polls too) until it answers non-200 or the deadline.
func waitNotReady(readyz func() (int, string), within time.Duration) (int, string) {
	deadline := time.Now().Add(within)
	for {
		code, body := readyz()
		if code != http.StatusOK || time.Now().After(deadline) {
			return code, body
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Regression (found in review, seventeenth session): A worker whose DLQ or results stream is gone (deleted by hand, lost with
// a NATS node) cannot finish any invocation: it can neither publish a
// result nor dead-letter. /readyz must say so, as it does for the worker
// consumer, instead of keeping the pod in the load balancer and the
// rollout going.
func TestReadyzWhenAStreamIsMissing(t *testing.T) {
	for _, which := range []string{"AGENT_DLQ", "AGENT_RESULTS"} {
		t.Run(which, func(t *testing.T) {
			s := natstest.RunServer(t)
			cfg := config.DefaultWorker()
			cfg.NATS.URL = s.ClientURL()
			cfg.Worker.Name = "w-review-readyz-" + which
			r, readyz := startWorkerWithReadyz(t, cfg)
			if code, body := readyz(); code != http.StatusOK {
				t.Fatalf("before: /readyz %d %s", code, body)
			}
			ctx := context.Background()
			if err := r.Infra.JS.DeleteStream(ctx, which); err != nil {
				t.Fatal(err)
			}
			// Give a lazily-detecting implementation a request to fail on.
			sc := r.Infra.Streams
			cl, err := client.New(r.Infra.JS, r.Infra.NC, client.Config{RequestsStream: sc.RequestsStream, ResultsStream: sc.ResultsStream,
				RequestPrefix: sc.RequestPrefix, ResultPrefix: sc.ResultPrefix})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cl.Submit(ctx, supportRequest("inv-review-readyz-"+which, "A-1001")); err != nil {
				t.Fatal(err)
			}
			if code, body := waitNotReady(readyz, 10*time.Second); code == http.StatusOK {
				t.Errorf("/readyz answers %d %q while stream %s is missing", code, body, which)
			}
		})
	}
}
