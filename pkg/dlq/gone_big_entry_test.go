package dlq_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// Regression (found in review, twenty-first session): Gone of a large entry
// on a one-replica stream keeps the connection.
// Review (8ca8151): Gone always reads the entry with a stream message get
// (leaderGet), which answers with the WHOLE entry base64 in JSON, a third
// larger than the entry. The replayer's entryGone calls Gone before every
// publish of a plan that may be stale, when the entry is normally still
// there: for a whole dead letter on a server whose max_pending is its
// max_payload (the case direct gets were turned on for), the server closes
// the replayer's connection as a slow consumer, and Gone says "cannot tell".
func TestGoneOfAPresentBigEntryKeepsTheConnection(t *testing.T) {
	const limit = 16 << 20
	nc, js := bigPayloadServer(t, limit, limit)
	var disconnects atomic.Int64
	nc.SetDisconnectErrHandler(func(*nats.Conn, error) { disconnects.Add(1) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, dcfg, ack := publishWholeDeadLetter(ctx, t, nc, js)
	r := dlq.NewReader(js, dcfg)
	if _, err := r.Get(ctx, ack.Sequence); err != nil { // Get, a direct get, reads it fine
		t.Fatalf("Get: %v", err)
	}
	gctx, gcancel := context.WithTimeout(ctx, 10*time.Second)
	defer gcancel()
	gone, err := r.Gone(gctx, ack.Sequence)
	time.Sleep(200 * time.Millisecond) // let a disconnect be reported
	if gone || err != nil || disconnects.Load() > 0 {
		t.Fatalf("Gone of a present %d-byte entry (max_payload = max_pending = %d): gone=%v err=%v, disconnects=%d (connection %v)",
			len(req), limit, gone, err, disconnects.Load(), nc.Status())
	}
}
