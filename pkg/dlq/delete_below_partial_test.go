package dlq_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// cutJS hands out streams whose DeleteMsg calls cut after the
// n-th successful delete (an interrupted drain, a deadline reached).
type cutJS struct {
	jetstream.JetStream
	n   int64
	cut func()
}

func (j *cutJS) Stream(ctx context.Context, name string) (jetstream.Stream, error) {
	s, err := j.JetStream.Stream(ctx, name)
	if err != nil {
		return nil, err
	}
	return &cutStream{Stream: s, j: j}, nil
}

type cutStream struct {
	jetstream.Stream
	j    *cutJS
	done atomic.Int64
}

func (s *cutStream) DeleteMsg(ctx context.Context, seq uint64) error {
	err := s.Stream.DeleteMsg(ctx, seq)
	if err == nil && s.done.Add(1) == s.j.n {
		s.j.cut()
	}
	return err
}

// Regression (found in review of this session's fix, twenty-fourth session):
// DeleteBelow was one request (a purge: all or nothing).
// On a server older than 2.9.18 it is now a loop of reads and deletes, and
// an error mid-loop (here the caller's deadline, reached after three
// deletes) returns an error that says nothing of the entries already
// deleted. Its caller, the remover, then tells every entry of the batch
// "replayed, but ERROR deleting the DLQ entry (it stays there ...)" and
// counts an error for each, though some are gone; a pkg/dlq user cannot
// tell either.
//
// Correct: an error after deletes says how many (or which) were deleted.
func TestDeleteBelowPartialDeletesReported(t *testing.T) {
	for _, tg := range withMachineServer(t) {
		if tg.Name == "embedded" {
			continue // a purge: all or nothing
		}
		t.Run(tg.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cfg := dlqConfig(tg)
			p := dlq.NewPublisher(tg.JS, cfg)
			var seqs []uint64
			for i := range 10 {
				e := sampleEntry()
				e.InvocationID, e.Class, e.Agent = fmt.Sprintf("p%d", i), "SERVER", "alpha"
				ack, err := p.Publish(ctx, e)
				if err != nil {
					t.Fatal(err)
				}
				seqs = append(seqs, ack.Sequence)
			}
			dctx, dcancel := context.WithCancel(ctx)
			defer dcancel()
			r := dlq.NewReader(&cutJS{JetStream: tg.JS, n: 3, cut: dcancel}, cfg)
			if r.BatchDeletes() {
				t.Skipf("server %s batches", tg.NC.ConnectedServerVersion())
			}
			err := r.DeleteBelow(dctx, tg.Cfg.DLQSubject("SERVER", "alpha"), seqs[9]+1)
			left := len(list(ctx, t, dlq.NewReader(tg.JS, cfg), dlq.Filter{}).ids)
			deleted := 10 - left
			t.Logf("server %s: DeleteBelow deleted %d of 10 and returned %v", tg.NC.ConnectedServerVersion(), deleted, err)
			if err != nil && deleted > 0 && !strings.Contains(err.Error(), fmt.Sprintf("%d deleted", deleted)) {
				t.Fatalf("DeleteBelow deleted %d of the 10 entries, then returned %q: nothing says any entry was deleted", deleted, err)
			}
		})
	}
}
