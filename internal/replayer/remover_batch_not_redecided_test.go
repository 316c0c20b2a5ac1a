package replayer

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// flipVersionJS answers Conn() with the real connection, except inside
// dlq.Reader.DeleteBelow, where it answers with a connection whose version
// cannot be read (closed): the connection dropped (or moved to an older
// server) between dispatch's BatchDeletes check and DeleteBelow's own.
type flipVersionJS struct {
	*countingJS
	down *nats.Conn
}

func (j *flipVersionJS) Conn() *nats.Conn {
	pcs := make([]uintptr, 32)
	n := runtime.Callers(2, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if strings.Contains(f.Function, "dlq.(*Reader).DeleteBelow") || strings.Contains(f.Function, "dlq.(*Reader).PurgeBelow") {
			return j.down
		}
		if !more {
			break
		}
	}
	return j.countingJS.Conn()
}

// Regression (found in review of this session's fix, twenty-fourth session):
// the remover decided "batch" in dispatch
// (BatchDeletes), and DeleteBelow decides again. When the two answers
// differ (a reconnect in between), the batch the remover meant to purge
// runs through deleteEachBelow: one read and one delete per entry in a row,
// 256 entries within dispatch's ten seconds — the path the commit's own
// test says the remover never takes ("no reading the DLQ again") — and an
// error mid-way is reported for the whole batch (see
// TestDeleteBelowPartialDeletesReported).
//
// Correct: a batch that DeleteBelow will not purge goes one by one by the
// sequences the remover knows (no reads).
func TestRemoverBatchNotRedecidedByDeleteBelow(t *testing.T) {
	js, nc, srv := natstest.JetStream(t)
	x := uniqueFx(t, nc, js, srv.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const n = 300
	x.seed("rm-flip", n, "SERVER", 0)
	f, plan := x.openAndPlan(ctx, Selection{MaxReplays: 3})
	down, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	down.Close()
	calls := &streamCalls{}
	f.Reader = dlq.NewReader(&flipVersionJS{countingJS: &countingJS{JetStream: f.JS, c: calls}, down: down},
		dlq.Config{Stream: x.sc.DLQStream, Prefix: x.sc.DLQPrefix, Consumer: x.sc.ReplayerConsumer})
	if !f.Reader.BatchDeletes() {
		t.Fatal("BatchDeletes() = false on the embedded server")
	}
	sum := NewSummary()
	if err := Execute(ctx, f, plan, ExecOptions{Concurrency: 8, Summary: sum}); err != nil {
		t.Fatal(err)
	}
	if left := x.dlqIDs(); len(left) != 0 {
		t.Fatalf("left in the DLQ: %d", len(left))
	}
	if g := calls.gets.Load(); g != 0 {
		t.Fatalf("removing %d replayed entries took %d purges, %d reads and %d deletes: the batch was re-decided in DeleteBelow and its entries read again one by one",
			n, calls.purges.Load(), g, calls.deletes.Load())
	}
}
