package app_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/logtest"
)

// TestHealthzWhileWaitingForNATS: a worker waiting for NATS (by design: it
// does not exit) answers /healthz 200 and /readyz 503 "starting".
//
// Regression (found in review, twenty-second session): /healthz was served
// only once Connect succeeded, so a liveness probe restarted a worker that
// was waiting for its NATS server.
func TestHealthzWhileWaitingForNATS(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "nats://" + l.Addr().String()
	l.Close()
	cfg := config.DefaultWorker()
	cfg.NATS.URL = down
	cfg.MetricsAddr = "127.0.0.1:0"
	cfg.Worker.Name = "w-healthz-connecting"
	logs := logtest.New("serving /metrics")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := app.StartWorker(ctx, cfg, func(string) string { return "" }, logs)
		done <- err
	}()
	t.Cleanup(func() { cancel(); <-done })
	logs.Wait(t, "serving /metrics")
	m := regexp.MustCompile(`"addr":"([^"]+)"`).FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no metrics address in\n%s", logs.String())
	}
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + m[1] + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	if code, body := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz while waiting for NATS: %d %q, want 200", code, body)
	}
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "starting") {
		t.Errorf("/readyz while waiting for NATS: %d %q, want 503 starting", code, body)
	}
	select {
	case err := <-done:
		t.Fatalf("StartWorker returned while NATS was down: %v", err)
	default:
	}
}
