package dlq_test

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// Regression (found in review, twenty-first session): a dead letter the
// Publisher stores on a server whose max_payload is above 8 MiB is read
// back, not reported as a BAD ENTRY.
//
// A server whose max_payload is raised above 8 MiB (NATS allows up to 64
// MiB): the Publisher fits an entry to that max payload (dlq.MaxWholeRequest
// promises a request up to max_payload less 9 KiB is dead-lettered whole),
// but DecodeEntry refuses every entry above MaxEntrySize (8 MiB, "well above
// any server's max payload"). The dead letter of a valid 9 MiB request is
// stored and acknowledged, then `dlq-replayer` reads it as a BAD ENTRY and
// can never replay it.
func TestEntryThePublisherStoresIsReadable(t *testing.T) {
	const maxPayload = 16 << 20
	nc, js := bigPayloadServer(t, maxPayload, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := streams.Config{}.WithDefaults()
	if _, err := streams.Ensure(ctx, js, cfg); err != nil {
		t.Fatal(err)
	}
	dcfg := dlq.Config{Stream: cfg.DLQStream, Prefix: cfg.DLQPrefix, Consumer: cfg.ReplayerConsumer}

	// A valid 9 MiB request: within what a dead letter carries whole here.
	size := 9 << 20
	if whole := dlq.MaxWholeRequest(nc.MaxPayload()); size > whole {
		t.Fatalf("precondition: %d > MaxWholeRequest %d", size, whole)
	}
	head := `{"v":1,"invocation_id":"inv-big","agent":"support","user_id":"u","session_id":"s","message":{"role":"user","parts":[{"text":"`
	tail := `"}]}}`
	req := []byte(head + strings.Repeat("x", size-len(head)-len(tail)) + tail)

	e := sampleEntry()
	e.InvocationID = "inv-big"
	e.SetRequest(req)
	ack, err := dlq.NewPublisher(js, dcfg).Publish(ctx, e)
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	it, err := dlq.NewReader(js, dcfg).Get(ctx, ack.Sequence)
	if err != nil {
		stored := "?" // a read that failed (not a bad entry) returns no Item
		if it != nil {
			stored = strconv.Itoa(len(it.Data))
		}
		t.Fatalf("the dead letter the Publisher stored (%s bytes, max_payload %d) cannot be read back: %v", stored, maxPayload, err)
	}
	if it.Entry.RequestTruncated || !bytes.Equal(it.Entry.OriginalRequest(), req) {
		t.Fatalf("request not kept whole")
	}
}
