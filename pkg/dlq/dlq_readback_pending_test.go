package dlq_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/pkg/dlq"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Regression (found in review, twenty-first session): the whole dead letter
// of the largest request the worker accepts is read back on a server whose
// max_pending is its max_payload (the DLQ stream allows direct gets).
//
// MaxEntrySize's comment: "every entry [the Publisher] stores can be read
// back, whatever the server's max_payload". Reader.Get and Reader.List (list,
// show, park, purge) read an entry with a stream message get, and the DLQ
// stream does not allow direct gets: the server answers with the entry
// base64 in a JSON API response, a third larger than the entry. On a server
// whose max_pending is its max_payload (allowed: max_payload may not exceed
// max_pending), the read of a whole dead letter of an accepted request
// exceeds max_pending: the server closes the reader's connection as a slow
// consumer and the entry can never be listed or shown.
func TestWholeEntryReadBackWithinMaxPending(t *testing.T) {
	const limit = 16 << 20
	nc, js := bigPayloadServer(t, limit, limit)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, dcfg, ack := publishWholeDeadLetter(ctx, t, nc, js)
	gctx, gcancel := context.WithTimeout(ctx, 10*time.Second)
	defer gcancel()
	it, err := dlq.NewReader(js, dcfg).Get(gctx, ack.Sequence)
	if err != nil {
		t.Fatalf("the whole dead letter of a %d-byte request (MaxWholeRequest; max_payload = max_pending = %d) cannot be read back: %v (connection %v)",
			len(req), limit, err, nc.Status())
	}
	if it.Entry.RequestTruncated || !bytes.Equal(it.Entry.OriginalRequest(), req) {
		t.Fatal("request not kept whole")
	}
}

// publishWholeDeadLetter ensures the default streams on js and publishes
// the dead letter of the largest request the worker accepts on nc's
// server (dlq.MaxWholeRequest): the request, the DLQ config and the ack.
func publishWholeDeadLetter(ctx context.Context, t *testing.T, nc *nats.Conn, js jetstream.JetStream) ([]byte, dlq.Config, *jetstream.PubAck) {
	t.Helper()
	cfg := streams.Config{}.WithDefaults()
	if _, err := streams.Ensure(ctx, js, cfg); err != nil {
		t.Fatal(err)
	}
	dcfg := dlq.Config{Stream: cfg.DLQStream, Prefix: cfg.DLQPrefix, Consumer: cfg.ReplayerConsumer}
	whole := dlq.MaxWholeRequest(nc.MaxPayload())
	head := `{"v":1,"invocation_id":"inv-big","agent":"support","user_id":"u","session_id":"s","message":{"role":"user","parts":[{"text":"`
	tail := `"}]}}`
	req := []byte(head + strings.Repeat("x", whole-len(head)-len(tail)) + tail)
	now := time.Now().UTC()
	e := &dlq.Entry{InvocationID: "inv-big", Agent: "support", Class: "SERVER", Reason: "model 503 after retries",
		Retryable: true, DeliveryCount: 1, FirstFailedAt: now, FailedAt: now, Worker: "host-1234", SourceSeq: 1}
	e.SetRequest(req)
	ack, err := dlq.NewPublisher(js, dcfg).Publish(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	return req, dcfg, ack
}
