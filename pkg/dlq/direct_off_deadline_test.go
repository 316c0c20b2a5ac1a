package dlq_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// Regression (found in review, twenty-first session): a read with a
// deadline falls back when direct gets were turned off. getMsg fell back to a stream message get when direct gets were
// turned off (an earlier version's Ensure) only when its ctx goes on after
// the direct get: on NATS 2.9 the direct get gets no answer and the client
// waits for ctx's deadline when ctx has one, so every read with a deadline
// (the replayer's deleteEntry: 10 s; any caller's timeout) fails instead
// of reading the entry. Needs NATS_URL (a 2.9 server).
func TestGetWithDeadlineAfterDirectGetsTurnedOff(t *testing.T) {
	if os.Getenv("NATS_URL") == "" {
		t.Skip("needs NATS_URL (a NATS 2.9 server)")
	}
	tg := streamstest.External(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e := sampleEntry()
	e.InvocationID = "inv-deadline"
	ack, err := dlq.NewPublisher(tg.JS, dlqConfig(tg)).Publish(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	r := dlq.NewReader(tg.JS, dlqConfig(tg))
	if _, err := r.Get(ctx, ack.Sequence); err != nil { // looks the stream up: direct gets on
		t.Fatal(err)
	}
	s, err := tg.JS.Stream(ctx, tg.Cfg.DLQStream)
	if err != nil {
		t.Fatal(err)
	}
	sc := s.CachedInfo().Config
	sc.AllowDirect = false // an earlier version's Ensure
	if _, err := tg.JS.UpdateStream(ctx, sc); err != nil {
		t.Fatal(err)
	}
	gctx, gcancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer gcancel()
	start := time.Now()
	it, err := r.Get(gctx, ack.Sequence)
	if err != nil {
		t.Fatalf("get with a 3 s deadline after direct gets were turned off: %v (after %v)", err, time.Since(start).Round(time.Millisecond))
	}
	if it.Entry.InvocationID != "inv-deadline" {
		t.Fatalf("read %q", it.Entry.InvocationID)
	}
}
