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
	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/pkg/client"
)

// When the shared "workers" consumer disappears (deleted by hand, lost
// with a NATS node, the stream re-created), the worker's pulls fail with
// "no responders". The worker warns (rate-limited), backs off, re-creates
// the consumer with the fleet's configuration, and /readyz answers 503
// from the first failed fetch until a fetch succeeds again; a request
// published after the consumer vanished runs once it is back.
func TestReadyzWhileTheConsumerIsGone(t *testing.T) {
	s := natstest.RunServer(t)
	cfg := config.DefaultWorker()
	cfg.NATS.URL = s.ClientURL()
	cfg.MetricsAddr = "127.0.0.1:0"
	cfg.LogLevel = "debug"
	cfg.Worker.Name = "w-readyz-consumer"
	cfg.Model.Sim.Latency = time.Millisecond
	logs := logtest.New("serving /metrics", "fetch ended with an error")
	ctx, cancel := context.WithCancel(context.Background())
	r, err := app.StartWorker(ctx, cfg, func(string) string { return "" }, logs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = r.Wait() })
	logs.Wait(t, "serving /metrics")
	m := regexp.MustCompile(`"addr":"([^"]+)"`).FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no metrics address in\n%s", logs.String())
	}
	readyz := func() (int, string) {
		resp, err := http.Get("http://" + m[1] + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	if code, body := readyz(); code != http.StatusOK {
		t.Fatalf("before: /readyz %d %s", code, body)
	}

	stream, err := r.Infra.JS.Stream(ctx, streams.DefaultRequestsStream)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.DeleteConsumer(ctx, streams.DefaultWorkerConsumer); err != nil {
		t.Fatal(err)
	}
	logs.Wait(t, "fetch ended with an error") // the worker's pulls now fail

	if code, body := readyz(); code == http.StatusOK {
		t.Errorf("/readyz answers %d %q while the worker's consumer is gone and it consumes nothing", code, body)
	}

	sc := r.Infra.Streams
	cl, err := client.New(r.Infra.JS, r.Infra.NC, client.Config{RequestsStream: sc.RequestsStream, ResultsStream: sc.ResultsStream,
		RequestPrefix: sc.RequestPrefix, ResultPrefix: sc.ResultPrefix})
	if err != nil {
		t.Fatal(err)
	}
	actx, acancel := context.WithTimeout(ctx, 20*time.Second)
	defer acancel()
	if _, err := cl.SubmitAndAwait(actx, supportRequest("inv-readyz-consumer", "A-1001")); err != nil {
		t.Errorf("request published after the consumer vanished never ran: %v (fetch failures logged: %d)",
			err, strings.Count(logs.String(), "fetch ended with an error"))
	}
}
