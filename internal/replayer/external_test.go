package replayer

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// The walk (a prefetching ack-none consumer) and the batched removal
// (filtered purge below a sequence) work on the server production runs:
// NATS_URL, 2.9 in CI. Streams and subjects are unique to the test.
func TestReplayAgainstExternalNATS(t *testing.T) {
	url := os.Getenv("NATS_URL")
	if url == "" {
		t.Skip("NATS_URL not set")
	}
	u := streamstest.UniqueConfig()
	cfg := config.DefaultReplayer()
	cfg.NATS.URL = url
	cfg.Streams.Requests, cfg.Streams.Results, cfg.Streams.DLQ = u.RequestsStream, u.ResultsStream, u.DLQStream
	cfg.Streams.RequestPrefix, cfg.Streams.ResultPrefix, cfg.Streams.DLQPrefix = u.RequestPrefix, u.ResultPrefix, u.DLQPrefix
	sc := StreamsConfig(cfg)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := streams.Ensure(ctx, js, sc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, s := range []string{sc.RequestsStream, sc.ResultsStream, sc.DLQStream} {
			_ = js.DeleteStream(context.Background(), s)
		}
	})
	x := &fx{t: t, nc: nc, js: js, sc: sc, url: url, cfg: cfg,
		pub: dlq.NewPublisher(js, dlq.Config{Stream: sc.DLQStream, Prefix: sc.DLQPrefix})}
	ids := x.seed("ext", 600, "SERVER", 0)
	x.seed("ext-auth", 3, "AUTH", 0) // not auto-replayable: stays
	f, plan := x.openAndPlan(ctx, Selection{MaxReplays: 3})
	if len(plan) != len(ids)+3 {
		t.Fatalf("planned %d entries, want %d", len(plan), len(ids)+3)
	}
	sum := NewSummary()
	if err := Execute(ctx, f, plan, ExecOptions{Concurrency: 8, Summary: sum}); err != nil {
		t.Fatal(err)
	}
	if tot := sum.Total(); tot.Replayed != len(ids) || tot.Skipped != 3 || tot.Errors != 0 {
		t.Fatalf("summary = %+v", tot)
	}
	if left := x.dlqIDs(); len(left) != 3 {
		t.Fatalf("left in the DLQ: %v, want the 3 AUTH entries", left)
	}
	if got := x.requestMsgIDs(); len(got) != len(ids) {
		t.Fatalf("%d replays stored, want %d", len(got), len(ids))
	}
}
