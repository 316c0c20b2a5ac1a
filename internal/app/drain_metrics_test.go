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

// On SIGTERM (the end of RunWorker's context) the worker drains its
// in-flight invocations for up to worker.drain_timeout (25s) + 10s. The
// HTTP server stays up until the drain has finished, so everything those
// invocations count (completions, dead letters, AUTH pages, lease losses)
// is still scraped on a rolling deploy; /readyz answers 503 from the
// signal on, /healthz stays 200.
func TestMetricsServedWhileDraining(t *testing.T) {
	s := natstest.RunServer(t)
	cfg := config.DefaultWorker()
	cfg.NATS.URL = s.ClientURL()
	cfg.MetricsAddr = "127.0.0.1:0"
	cfg.LogLevel = "info"
	cfg.Worker.Name = "w-drain-metrics"
	cfg.Model.Sim.Latency = 700 * time.Millisecond // a few model calls: the drain lasts seconds
	logs := logtest.New("serving /metrics", "stopping: draining in-flight invocations")
	ctx, cancel := context.WithCancel(context.Background())
	r, err := app.StartWorker(ctx, cfg, func(string) string { return "" }, logs)
	if err != nil {
		t.Fatal(err)
	}
	waited := false
	t.Cleanup(func() {
		cancel()
		if !waited {
			_ = r.Wait()
		}
	})
	logs.Wait(t, "serving /metrics")
	addr := regexp.MustCompile(`"addr":"([^"]+)"`).FindStringSubmatch(logs.String())[1]
	get := func(path string) (int, string, error) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	scrape := func() (string, error) {
		_, body, err := get("/metrics")
		return body, err
	}

	sc := r.Infra.Streams
	cl, err := client.New(r.Infra.JS, r.Infra.NC, client.Config{RequestsStream: sc.RequestsStream, ResultsStream: sc.ResultsStream,
		RequestPrefix: sc.RequestPrefix, ResultPrefix: sc.ResultPrefix})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Submit(ctx, supportRequest("inv-drain-metrics", "A-1001")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		body, err := scrape()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(body, "\nagentfleet_worker_in_flight 1\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the invocation never started")
		}
		time.Sleep(10 * time.Millisecond) // polling the scrape endpoint, as Prometheus does
	}

	cancel() // SIGTERM
	logs.Wait(t, "stopping: draining in-flight invocations")
	done := make(chan error, 1)
	go func() { done <- r.Wait() }()
	waited = true
	for {
		select {
		case <-done:
			return // drained with /metrics up the whole time
		default:
		}
		if _, err := scrape(); err != nil {
			// The server stops once the drain has finished (the worker
			// logged "drained"), a moment before Wait returns.
			if !strings.Contains(logs.String(), `"message":"drained"`) {
				t.Errorf("/metrics gone while the worker still drains an invocation: %v", err)
			}
			<-done
			return
		}
		if code, body, err := get("/readyz"); err == nil && code != http.StatusServiceUnavailable {
			t.Errorf("/readyz while draining: %d %q, want 503", code, body)
		}
		if code, _, err := get("/healthz"); err == nil && code != http.StatusOK {
			t.Errorf("/healthz while draining: %d, want 200", code)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
