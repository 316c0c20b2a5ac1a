package worker

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/natstest"
)

// Regression (found in review, sixteenth session): a message that arrives at a pull while the worker is stopping is Nak'ed
// for another worker once: the Nak must not hand it straight back to the
// same, still open pull, which would Nak it again and again (a delivery
// each) until the pull's batch is used up.
func TestFetchWhileStoppingNaksEachMessageOnce(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "REQ", Subjects: []string{"req.>"}, Retention: jetstream.WorkQueuePolicy}); err != nil {
		t.Fatal(err)
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, "REQ", jetstream.ConsumerConfig{Durable: "workers", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute, MaxDeliver: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "req.a", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	w := &Worker{cons: cons, cfg: Config{FetchWait: 2 * time.Second}}
	stop, cancel := context.WithCancel(ctx)
	cancel() // the worker is stopping while the pull runs
	const n = 8
	fctx, fcancel := context.WithTimeout(ctx, 2*time.Second)
	defer fcancel()
	work := make(chan jetstream.Msg, n)
	got, err := w.fetch(fctx, stop, n, work)
	if err != nil || got != 0 {
		t.Fatalf("fetch = %d, %v; want 0 handed over", got, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Delivered.Consumer != 1 {
		t.Fatalf("the stopping pull took the message %d times (Nak'ed each time, back to the same pull), want once", info.Delivered.Consumer)
	}
}
