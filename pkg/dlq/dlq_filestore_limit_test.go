package dlq_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/pkg/dlq"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// bigPayloadServer starts an embedded JetStream server (file storage, the
// streams' default) with the given max_payload and max_pending (0: the
// server's default) and returns a connection.
func bigPayloadServer(t *testing.T, maxPayload int32, maxPending int64) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	opts := &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(),
		NoLog: true, NoSigs: true, MaxPayload: maxPayload, MaxPending: maxPending}
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		t.Fatal("server not ready")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// Regression (found in review, twenty-first session): the largest request
// the worker accepts on a server whose max_payload is above 32 MiB is
// dead-lettered whole on a file-storage DLQ, and one near 32 MiB is
// refused up front.
//
// MaxWholeRequest clamped to MaxEntrySize (64 MiB) "what the Publisher
// may write", but a JetStream file store (the streams' default storage)
// refuses any record above 32 MiB (nats-server rlBadThresh, "message too
// large"). On a server whose max_payload is above 32 MiB, a request that
// AGENT_REQUESTS stores and the worker accepts (it is under
// MaxWholeRequest) can be within a few hundred bytes of 32 MiB; its dead
// letter is that request plus the entry's own fields, and the DLQ stream
// refuses it: Publish fails, the worker Naks (own infrastructure) and the
// invocation comes back for ever; it is never dead-lettered. MaxWholeRequest
// now leaves that room (MaxStoredEntry): such a request is refused up front
// (BAD_INPUT), and the largest one the worker takes is dead-lettered whole.
func TestAcceptedRequestIsDeadLetteredOnFileStorage(t *testing.T) {
	nc, js := bigPayloadServer(t, 48<<20, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cfg := streams.Config{}.WithDefaults()
	if _, err := streams.Ensure(ctx, js, cfg); err != nil {
		t.Fatal(err)
	}
	dcfg := dlq.Config{Stream: cfg.DLQStream, Prefix: cfg.DLQPrefix, Consumer: cfg.ReplayerConsumer}

	whole := dlq.MaxWholeRequest(nc.MaxPayload())
	if near := 32<<20 - 256; near <= whole {
		t.Fatalf("the worker accepts a %d-byte request (MaxWholeRequest %d on max_payload %d), which a file store cannot dead-letter whole",
			near, whole, nc.MaxPayload())
	}
	if whole < 31<<20 {
		t.Fatalf("MaxWholeRequest %d on max_payload %d: far below what a file store takes", whole, nc.MaxPayload())
	}
	size := whole // the largest request the worker accepts
	head := `{"v":1,"invocation_id":"inv-big","agent":"support","user_id":"u","session_id":"s","message":{"role":"user","parts":[{"text":"`
	tail := `"}]}}`
	req := []byte(head + strings.Repeat("x", size-len(head)-len(tail)) + tail)
	if _, err := envelope.DecodeRequest(req, size); err != nil {
		t.Fatalf("precondition: the worker refuses the request: %v", err)
	}
	// The producer's publish: AGENT_REQUESTS stores it.
	if _, err := js.Publish(ctx, envelope.RequestSubject(cfg.RequestPrefix, "support"), req, jetstream.WithMsgID("inv-big")); err != nil {
		t.Fatalf("precondition: AGENT_REQUESTS refuses the request: %v", err)
	}

	now := time.Now().UTC()
	e := &dlq.Entry{InvocationID: "inv-big", Agent: "support", Class: "SERVER", Reason: "model 503 after retries",
		Retryable: true, DeliveryCount: 1, FirstFailedAt: now, FailedAt: now, Worker: "host-1234",
		Model: "gemini-2.5-flash", ToolsCompleted: []string{"lookup_customer_orders", "get_order"}, SourceSeq: 1}
	e.SetRequest(req)
	ack, err := dlq.NewPublisher(js, dcfg).Publish(ctx, e)
	if err != nil {
		t.Fatalf("a %d-byte request (stored by AGENT_REQUESTS, accepted by the worker: MaxWholeRequest %d on max_payload %d) cannot be dead-lettered: %v",
			size, dlq.MaxWholeRequest(nc.MaxPayload()), nc.MaxPayload(), err)
	}
	it, err := dlq.NewReader(js, dcfg).Get(ctx, ack.Sequence)
	if err != nil {
		t.Fatal(err)
	}
	if it.Entry.RequestTruncated || !bytes.Equal(it.Entry.OriginalRequest(), req) {
		t.Fatalf("request not kept whole")
	}
}

// Regression (found in review, twenty-first session): the dead letter of a
// refused request larger than a file store takes is cut to fit and
// written, not refused by the DLQ stream.
//
// The same limit for a refused request: with the default
// streams.max_request_bytes (1 MiB less 16 KiB) the worker refuses a
// request AGENT_REQUESTS stored (BAD_INPUT) and dead-letters it as it came.
// A request that is not JSON is kept base64, a third larger: one of 28 MiB
// makes a 37 MiB entry. A cut request is allowed there, but EncodeToFit
// cut only to max_payload less 1 KiB (or MaxEntrySize), not to what the
// file store takes (32 MiB): the DLQ refused the entry and the BAD_INPUT
// message was Nak'ed for ever instead of being dead-lettered and
// terminated.
func TestRefusedLargeRequestIsDeadLetteredOnFileStorage(t *testing.T) {
	_, js := bigPayloadServer(t, 48<<20, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cfg := streams.Config{}.WithDefaults()
	if _, err := streams.Ensure(ctx, js, cfg); err != nil {
		t.Fatal(err)
	}
	dcfg := dlq.Config{Stream: cfg.DLQStream, Prefix: cfg.DLQPrefix, Consumer: cfg.ReplayerConsumer}
	req := bytes.Repeat([]byte("y"), 28<<20) // not JSON: BAD_INPUT, kept base64
	if _, err := js.Publish(ctx, envelope.RequestSubject(cfg.RequestPrefix, "support"), req, jetstream.WithMsgID("inv-refused")); err != nil {
		t.Fatalf("precondition: AGENT_REQUESTS refuses the request: %v", err)
	}
	now := time.Now().UTC()
	e := &dlq.Entry{InvocationID: "inv-refused", Agent: "support", Class: "BAD_INPUT", Reason: "not a JSON request object",
		DeliveryCount: 1, FirstFailedAt: now, FailedAt: now, Worker: "host-1234", SourceSeq: 1}
	e.SetRequest(req)
	ack, err := dlq.NewPublisher(js, dcfg).Publish(ctx, e)
	if err != nil {
		t.Fatalf("the BAD_INPUT dead letter of a %d-byte request AGENT_REQUESTS stored cannot be written (the entry keeps %d request bytes, base64; max_payload %d): %v",
			len(req), len(e.RequestRaw), js.Conn().MaxPayload(), err)
	}
	it, err := dlq.NewReader(js, dcfg).Get(ctx, ack.Sequence)
	if err != nil {
		t.Fatalf("the dead letter stored cannot be read back: %v", err)
	}
	if got := it.Entry; !got.RequestTruncated || got.RequestSize != len(req) || !bytes.HasPrefix(req, got.OriginalRequest()) {
		t.Fatalf("dead letter: truncated=%v size=%d, kept %d bytes; want a prefix of the %d-byte request, marked cut",
			got.RequestTruncated, got.RequestSize, len(got.OriginalRequest()), len(req))
	}
}
