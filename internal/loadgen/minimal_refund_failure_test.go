package loadgen

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// proofMsg is a delivered request: it records how the handler settled it.
type proofMsg struct {
	data    []byte
	settled string
}

func (m *proofMsg) Metadata() (*jetstream.MsgMetadata, error) { return &jetstream.MsgMetadata{}, nil }
func (m *proofMsg) Data() []byte                              { return m.data }
func (m *proofMsg) Headers() nats.Header                      { return nats.Header{} }
func (m *proofMsg) Subject() string                           { return "agent.requests.support" }
func (m *proofMsg) Reply() string                             { return "" }
func (m *proofMsg) Ack() error                                { m.settled = "ack"; return nil }
func (m *proofMsg) DoubleAck(context.Context) error           { m.settled = "ack"; return nil }
func (m *proofMsg) Nak() error                                { m.settled = "nak"; return nil }
func (m *proofMsg) NakWithDelay(time.Duration) error          { m.settled = "nak"; return nil }
func (m *proofMsg) InProgress() error                         { return nil }
func (m *proofMsg) Term() error                               { m.settled = "term"; return nil }
func (m *proofMsg) TermWithReason(string) error               { m.settled = "term"; return nil }

// The minimal consumer's claim (SET NX) is taken before the refund. It was
// never released when the refund failed: the message was Nak'ed, came
// back, and the redelivery found the key claimed, took that as "the effect
// happened", skipped the refund and published a completed result (and
// loadgen counted it completed: nothing compared completed invocations with
// refunds). The claim is now released, and loadgen fails a phase whose
// refund records differ from its completed invocations (with the order
// pool, where every invocation refunds an order of its own).
func TestMinimalConsumerRefundsAfterAFailedAttempt(t *testing.T) {
	ctx := context.Background()
	js, nc, _ := natstest.JetStream(t)
	sc := streams.Config{}.WithDefaults()
	if _, err := streams.Ensure(ctx, js, sc); err != nil {
		t.Fatal(err)
	}
	rdb, prefix := redistest.Client(t)
	store := newRedisMinimal(rdb, prefix)
	mc := &minimalConsumer{js: js, sc: sc, store: store, name: "proof-0"}

	id := "lg-proof-minimal-0"
	data, err := json.Marshal(request(id, "A-1001"))
	if err != nil {
		t.Fatal(err)
	}
	// The orders service fails the booking once (its key hash is the
	// wrong type: the script errors before it writes anything).
	if err := rdb.Set(ctx, prefix+"demo:refund_keys", "unavailable", 0).Err(); err != nil {
		t.Fatal(err)
	}
	first := &proofMsg{data: data}
	herr := mc.handle(ctx, first)
	t.Logf("first delivery: %v (%s)", herr, first.settled)
	if herr == nil || first.settled != "nak" {
		t.Fatalf("first delivery: err %v, settled %q; want the refund's error and a nak", herr, first.settled)
	}
	if err := rdb.Del(ctx, prefix+"demo:refund_keys").Err(); err != nil {
		t.Fatal(err)
	}
	second := &proofMsg{data: data}
	if err := mc.handle(ctx, second); err != nil {
		t.Fatalf("redelivery: %v", err)
	}

	cl, err := client.New(js, nc, client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := cl.Lookup(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := store.refunds(ctx)
	if err != nil {
		t.Fatal(err)
	}
	refunds, dups, _, err := countRefunds(recs, "lg-proof-minimal")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("result %s (%q), redelivery %s, refund records %d, duplicates %d", res.Status, res.Content, second.settled, refunds, dups)
	if res.Status == envelope.StatusCompleted && refunds != 1 {
		t.Errorf("result completed (%q) with %d refund records, want 1: the effect was skipped on the redelivery", res.Content, refunds)
	}
}
