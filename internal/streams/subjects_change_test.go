package streams_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/streams"
)

// A process whose configuration names the fleet's requests stream but
// another subject prefix (a staging fleet that kept the stream names, a
// typo in request_prefix) runs Ensure at start-up. Ensure rewrote the live
// work queue's subjects and the shared "workers" consumer's filter: the
// requests already queued under the old prefix stayed in the stream but no
// consumer could ever deliver them (and producers on the old prefix got no
// stream). It now refuses the change with a configuration error.
func TestPrefixChangeIsRefused(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	fleet := streams.Config{}.WithDefaults()
	if _, err := streams.Ensure(ctx, js, fleet); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, fleet.RequestSubject("support"), []byte(`{"v":1}`), jetstream.WithMsgID("inv-queued")); err != nil {
		t.Fatal(err)
	}

	other := fleet
	other.RequestPrefix = "staging.requests"
	if _, err := streams.Ensure(ctx, js, other); err != nil {
		if !errors.Is(err, streams.ErrInvalidConfig) {
			t.Fatalf("Ensure with another prefix: %v, want a configuration error", err)
		}
		t.Logf("Ensure refused the subject change: %v", err)
		return
	}
	t.Error("Ensure with another prefix was accepted")

	s, err := js.Stream(ctx, fleet.RequestsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := js.Consumer(ctx, fleet.RequestsStream, fleet.WorkerConsumer)
	if err != nil {
		t.Fatal(err)
	}
	ci, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ci.NumPending+uint64(ci.NumAckPending) == 0 {
		t.Fatalf("the queued request is orphaned: stream %s holds %d message(s) but its subjects are now %v and the %q consumer (filter %q) has %d pending",
			fleet.RequestsStream, info.State.Msgs, info.Config.Subjects, fleet.WorkerConsumer, ci.Config.FilterSubject, ci.NumPending)
	}
}
