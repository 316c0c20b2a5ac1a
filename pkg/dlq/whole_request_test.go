package dlq_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/dlq"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// A request the worker accepts (DecodeRequest with the default limit) and
// the requests stream stored survives dead-lettering whole: a transient
// failure (SERVER, auto-replayable) is dead-lettered "for replay", and
// replay = republish the original request (DESIGN.md). The Publisher cut
// any request within ~9 KiB of the max payload (1 KiB header reserve plus
// the entry's own fields) while the default limit was the whole 1 MiB, so
// such an invocation could never be replayed (the replayer skips
// RequestTruncated entries). The default limit now leaves that room
// (envelope.DefaultMaxSize), and the worker refuses anything above
// dlq.MaxWholeRequest (TestRequestTooLargeForADeadLetterIsRefused).
func TestValidRequestSurvivesDeadLettering(t *testing.T) {
	tg := streamstest.Embedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	maxPayload := int(tg.NC.MaxPayload())
	const id = "inv-large-1"
	// A valid request, compact JSON, 200 bytes under the max payload
	// (room for the Nats-Msg-Id header the producer sets).
	want := maxPayload - 200
	build := func(n int) []byte {
		return []byte(`{"v":1,"invocation_id":"` + id + `","agent":"support","user_id":"u1","session_id":"s1","message":{"role":"user","parts":[{"text":"` + strings.Repeat("x", n) + `"}]}}`)
	}
	empty := len(build(0))
	data := build(want - empty)
	if len(data) != want {
		t.Fatalf("built %d bytes, want %d", len(data), want)
	}
	if _, err := envelope.DecodeRequest(data, envelope.DefaultMaxSize); err == nil {
		t.Fatalf("the default request limit takes %d bytes, more than a dead letter carries whole (%d)", len(data), dlq.MaxWholeRequest(int64(maxPayload)))
	}
	// The largest request the default limit takes survives whole.
	want = envelope.DefaultMaxSize
	data = build(want - empty)
	// The producer's publish: the requests stream stores it.
	ack, err := tg.JS.Publish(ctx, tg.Cfg.RequestSubject("support"), data, jetstream.WithMsgID(id))
	if err != nil {
		t.Fatalf("the requests stream refuses the request (precondition): %v", err)
	}

	// The worker dead-letters it after a transient failure, as
	// internal/worker's deadLetter builds the entry.
	now := time.Now().UTC()
	e := &dlq.Entry{
		InvocationID: id, Agent: "support", Class: "SERVER", Reason: "model 503 after retries",
		Retryable: true, DeliveryCount: 1, FirstFailedAt: now, FailedAt: now, Worker: "host-1234",
		Model: "gemini-2.5-flash", ToolsCompleted: []string{"get_order"}, SourceSeq: ack.Sequence,
	}
	e.SetRequest(data)
	pa, err := dlq.NewPublisher(tg.JS, dlqConfig(tg)).Publish(ctx, e)
	if err != nil {
		t.Fatalf("publish dead letter: %v", err)
	}
	it, err := dlq.NewReader(tg.JS, dlqConfig(tg)).Get(ctx, pa.Sequence)
	if err != nil {
		t.Fatal(err)
	}
	got := it.Entry
	if got.RequestTruncated || !bytes.Equal(got.OriginalRequest(), data) {
		t.Fatalf("dead letter of a valid %d-byte request: truncated=%v, kept %d of %d bytes: it can never be replayed",
			len(data), got.RequestTruncated, len(got.OriginalRequest()), len(data))
	}
}
