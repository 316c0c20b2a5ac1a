package app_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/redistest"
)

func fastConfig(t *testing.T) config.Worker {
	c := config.DefaultWorker()
	c.Worker.Name = "test-" + strings.ReplaceAll(t.Name(), "/", "-")
	c.Embedded.Enabled = true
	c.Model.Sim.Latency = time.Millisecond
	c.Model.Retry.Initial, c.Model.Retry.Max = 5*time.Millisecond, 20*time.Millisecond
	c.Cooldown.Duration = 500 * time.Millisecond
	c.Worker.Concurrency = 32
	c.Worker.BusyDelay = 50 * time.Millisecond
	c.LogLevel = "error"
	return c
}

// A 40 % simulated fault run of 500 invocations: every invocation ends
// completed or dead-lettered, the sum matches, and no order is refunded
// twice.
func TestFortyPercentFaultsFiveHundredInvocations(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	cfg := fastConfig(t)
	cfg.Model.Sim.Faults = "server=0.4"
	var out bytes.Buffer
	rep, err := app.RunDemo(context.Background(), cfg, 500, os.Getenv, &out, io.Discard)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	sum := 0
	for k, n := range rep.ByOutcome {
		// The invariant: completed or dead-lettered (any class; a
		// cooldown opening mid-run may rarely exhaust the run limit).
		if !strings.HasPrefix(k, "completed") && !strings.HasPrefix(k, "dead_lettered") {
			t.Errorf("unexpected outcome %q (%d)", k, n)
		}
		sum += n
	}
	if sum != 500 || rep.Lost != 0 || rep.Duplicates != 0 {
		t.Fatalf("sum=%d lost=%d duplicates=%d\n%s", sum, rep.Lost, rep.Duplicates, out.String())
	}
	if rep.ByOutcome["completed"] == 0 || rep.ByOutcome["completed"] == 500 {
		t.Fatalf("a 40%% fault run should both complete and dead-letter some: %v", rep.ByOutcome)
	}
	if rep.Refunds > 500 {
		t.Fatalf("%d refunds for 500 invocations", rep.Refunds)
	}
	t.Logf("\n%s", out.String())
}

// The worker against the machine's NATS server (2.9 here) when NATS_URL is
// set, with Redis stores under a prefix and stream names of its own.
func TestWorkerAgainstExternalNATS(t *testing.T) {
	url := os.Getenv("NATS_URL")
	if url == "" {
		t.Skip("NATS_URL not set (CI sets it to the local NATS 2.9 server)")
	}
	_, prefix := redistest.Client(t)
	cfg := fastConfig(t)
	cfg.Embedded.Enabled = false
	cfg.NATS.URL = url
	cfg.Redis.URL = redistest.URL()
	cfg.Redis.Prefix, cfg.Redis.DemoPrefix = prefix, prefix
	sfx := fmt.Sprintf("T%d", time.Now().UnixNano())
	cfg.Streams.Requests, cfg.Streams.Results, cfg.Streams.DLQ = "REQ_"+sfx, "RES_"+sfx, "DLQ_"+sfx
	t.Cleanup(func() { deleteStreams(t, url, cfg.Streams.Requests, cfg.Streams.Results, cfg.Streams.DLQ) })
	var out bytes.Buffer
	rep, err := app.RunDemo(context.Background(), withSubjectPrefix(cfg, sfx), 20, os.Getenv, &out, io.Discard)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if rep.ByOutcome["completed"] != 20 || rep.Refunds != 20 {
		t.Fatalf("%v\n%s", rep.ByOutcome, out.String())
	}
}

// withSubjectPrefix gives the run subjects of its own: streams on a shared
// server must not overlap.
func withSubjectPrefix(c config.Worker, sfx string) config.Worker {
	c.Streams.RequestPrefix = "t" + sfx + ".requests"
	c.Streams.ResultPrefix = "t" + sfx + ".results"
	c.Streams.DLQPrefix = "t" + sfx + ".dlq"
	return c
}

func deleteStreams(t *testing.T, url string, names ...string) {
	nc, err := nats.Connect(url)
	if err != nil {
		t.Log(err)
		return
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	for _, n := range names {
		_ = js.DeleteStream(context.Background(), n)
	}
}
