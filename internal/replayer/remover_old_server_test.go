package replayer

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// streamCalls counts the requests a Reader makes on its stream.
type streamCalls struct {
	gets, deletes, purges atomic.Int64
}

// countingJS hands out streams that count into c.
type countingJS struct {
	jetstream.JetStream
	c *streamCalls
}

func (j *countingJS) Stream(ctx context.Context, name string) (jetstream.Stream, error) {
	s, err := j.JetStream.Stream(ctx, name)
	if err != nil {
		return nil, err
	}
	return &countingStream{Stream: s, c: j.c}, nil
}

type countingStream struct {
	jetstream.Stream
	c *streamCalls
}

func (s *countingStream) GetMsg(ctx context.Context, seq uint64, opts ...jetstream.GetMsgOpt) (*jetstream.RawStreamMsg, error) {
	s.c.gets.Add(1)
	return s.Stream.GetMsg(ctx, seq, opts...)
}

func (s *countingStream) DeleteMsg(ctx context.Context, seq uint64) error {
	s.c.deletes.Add(1)
	return s.Stream.DeleteMsg(ctx, seq)
}

func (s *countingStream) Purge(ctx context.Context, opts ...jetstream.StreamPurgeOpt) error {
	s.c.purges.Add(1)
	return s.Stream.Purge(ctx, opts...)
}

// Regression (found in review, twenty-fourth session): on NATS older than
// 2.9.18 the remover's batched removal (a filtered purge) made another
// replayer's walk skip dead letters, which that replayer then removed
// unreplayed (TestConcurrentRemovalOnOldNATSKeepsUnreplayedEntries).
//
// There the remover now deletes each handled entry by the sequence it
// knows, on the delete pool, as soon as it is handled: no purge, and no
// reading the DLQ again to find what a purge would have removed (which
// DeleteBelow has to do on such a server, one read and one delete per entry
// in a row, within the batch's ten seconds). On a current server it still
// removes a subject's run of entries with one purge per batch.
func TestRemoverDeletesEachEntryOnOldNATS(t *testing.T) {
	const n = 300 // a full batch (removeBatch) and the rest at the flush
	cases := []struct {
		name   string
		fx     func(t *testing.T) *fx
		batch  bool
		purges int64
	}{
		{"old (2.9.10)", func(t *testing.T) *fx {
			nc, js := oldNATS(t)
			return uniqueFx(t, nc, js, oldNATSURL)
		}, false, 0},
		{"current (embedded)", func(t *testing.T) *fx {
			js, nc, srv := natstest.JetStream(t)
			return uniqueFx(t, nc, js, srv.ClientURL())
		}, true, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := c.fx(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			ids := x.seed("rm-old", n, "SERVER", 0)
			f, plan := x.openAndPlan(ctx, Selection{MaxReplays: 3})
			calls := &streamCalls{}
			f.Reader = dlq.NewReader(&countingJS{JetStream: f.JS, c: calls},
				dlq.Config{Stream: x.sc.DLQStream, Prefix: x.sc.DLQPrefix, Consumer: x.sc.ReplayerConsumer})
			if got := f.Reader.BatchDeletes(); got != c.batch {
				t.Fatalf("server %s: BatchDeletes() = %v, want %v", x.nc.ConnectedServerVersion(), got, c.batch)
			}
			sum := NewSummary()
			if err := Execute(ctx, f, plan, ExecOptions{Concurrency: 8, Summary: sum}); err != nil {
				t.Fatal(err)
			}
			if tot := sum.Total(); tot.Replayed != n || tot.Errors != 0 {
				t.Fatalf("summary = %+v, want %d replayed", tot, n)
			}
			if left := x.dlqIDs(); len(left) != 0 {
				t.Fatalf("left in the DLQ: %v, want none", left)
			}
			got := x.requestMsgIDs()
			for _, id := range ids {
				if got["replay:"+id+":1"] != 1 {
					t.Fatalf("%s: %d replays published, want 1", id, got["replay:"+id+":1"])
				}
			}
			want := []int64{c.purges, 0, n}
			if c.batch {
				want[2] = 0
			}
			have := []int64{calls.purges.Load(), calls.gets.Load(), calls.deletes.Load()}
			if c.batch && have[0] >= 1 && have[0] <= c.purges {
				// How the entries fall into batches depends on how fast
				// they are handled (a slow machine hands the remover all
				// of them at once: one purge); what matters is purges, not
				// one delete per entry.
				want[0] = have[0]
			}
			if !slices.Equal(have, want) {
				t.Fatalf("server %s: removing %d replayed entries took %d purges, %d reads and %d deletes, want %d, %d and %d",
					x.nc.ConnectedServerVersion(), n, have[0], have[1], have[2], want[0], want[1], want[2])
			}
		})
	}
}
