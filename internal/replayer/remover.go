package replayer

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// removeBatch is how many handled entries of one subject a single
// PurgeBelow removes at most (at the end of a phase, fewer).
const removeBatch = 256

// remover takes handled entries (replayed after their PubAck, or parked) out
// of the DLQ. A JetStream message delete is a full API request that costs the
// server more than the replay's publish, so where it can the remover deletes
// a run of entries of one subject with one DeleteBelow instead:
//
//   - only for a plan that walked whole subjects (no --since, --invocation or
//     start sequence) and only as far as the plan still holds every entry
//     of the subject (Planned.prev links): then "below seq on this subject"
//     means exactly the planned entries;
//   - only for a prefix of a subject's planned entries that were all handled:
//     an entry that stays in the DLQ (skipped, bad, failed to publish, or
//     not reached before a halt) ends the prefix, and every handled entry
//     after it on that subject is deleted one by one;
//   - only on a server whose filtered purge moves no other consumer
//     (dlq.Reader.BatchDeletes: NATS 2.9.18 or later). On an older one a
//     purge made another replayer's walk skip entries of other subjects
//     unseen, and its own batched removal then deleted them unreplayed:
//     there every entry is deleted one by one, more slowly.
//
// Entries stay in the DLQ a little longer than with one delete each (until
// their batch is full or the phase ends); a replayer that dies in between
// leaves them to the next run, which finds them already replayed (the
// requests' duplicate window, and after it the worker's invocation record,
// keep a second replay from running the work twice).
type remover struct {
	x *exec

	mu   sync.Mutex
	runs map[string]*subjectRun // by subject, batched entries only
}

// slot states.
const (
	slotPending   = iota // not handled yet
	slotRemovable        // handled; waits for its subject's prefix
	slotStays            // stays in the DLQ: ends the subject's prefix
	slotHandedOff        // being removed (batched or one by one)
)

type slot struct {
	p     Planned
	state int
	done  func(error) // told the removal's outcome
}

// subjectRun is one subject's planned entries, in stream order.
type subjectRun struct {
	subject string
	slots   []*slot
	bySeq   map[uint64]*slot
	next    int     // first slot not yet handed off
	broken  bool    // a slot that stays was reached: no more batches
	batch   []*slot // handed-off prefix waiting for DeleteBelow
}

// newRemover indexes plan: for each subject, the longest run of entries,
// from the subject's first entry in the stream, whose links (Planned.prev)
// show that no other entry of the subject lies between them. Entries after
// a missing link are removed one by one, and so is every entry on a server
// without safe batches (dlq.Reader.BatchDeletes).
func newRemover(x *exec, plan []Planned) *remover {
	r := &remover{x: x, runs: map[string]*subjectRun{}}
	if !x.f.Reader.BatchDeletes() {
		return r
	}
	cut := map[string]bool{} // subjects whose chain broke
	for _, p := range plan {
		subj := p.Item.Subject
		if cut[subj] {
			continue
		}
		run := r.runs[subj]
		var want uint64
		if run != nil {
			want = run.slots[len(run.slots)-1].p.Item.Seq
		}
		if !p.chained || p.prev != want {
			cut[subj] = true
			continue
		}
		if run == nil {
			run = &subjectRun{subject: subj, bySeq: map[uint64]*slot{}}
			r.runs[subj] = run
		}
		s := &slot{p: p}
		if p.Action != ActionReplay && p.Action != ActionPark {
			s.state = slotStays
		}
		run.slots = append(run.slots, s)
		run.bySeq[p.Item.Seq] = s
	}
	return r
}

// remove takes the handled entry p out of the DLQ, now or with its batch,
// and calls done with the outcome (nil when the entry is gone).
func (r *remover) remove(ctx context.Context, p Planned, done func(error)) {
	r.mu.Lock()
	run := r.runs[p.Item.Subject]
	var s *slot
	if run != nil {
		s = run.bySeq[p.Item.Seq]
	}
	if s == nil || run.broken {
		r.mu.Unlock()
		r.one(ctx, p, done)
		return
	}
	s.state, s.done = slotRemovable, done
	singles := r.advance(run)
	var full []*slot
	if len(run.batch) >= removeBatch {
		full, run.batch = run.batch, nil
	}
	r.mu.Unlock()
	r.dispatch(ctx, run.subject, full, singles)
}

// stay marks a planned entry that was not handled (its publish failed): it
// stays in the DLQ, so its subject's batches end before it.
func (r *remover) stay(ctx context.Context, p Planned) {
	r.mu.Lock()
	run := r.runs[p.Item.Subject]
	if run == nil || run.bySeq[p.Item.Seq] == nil {
		r.mu.Unlock()
		return
	}
	run.bySeq[p.Item.Seq].state = slotStays
	singles := r.advance(run)
	r.mu.Unlock()
	r.dispatch(ctx, run.subject, nil, singles)
}

// advance moves run's prefix forward over removable slots into the batch.
// When it reaches a slot that stays, the run is broken: the removable slots
// after it are returned, to be removed one by one. r.mu is held.
func (r *remover) advance(run *subjectRun) (singles []*slot) {
	for run.next < len(run.slots) {
		s := run.slots[run.next]
		switch s.state {
		case slotRemovable:
			s.state = slotHandedOff
			run.batch = append(run.batch, s)
			run.next++
			continue
		case slotHandedOff:
			// Already being removed on its own (handed off at the end of an
			// earlier phase); a batch may cover it too.
			run.next++
			continue
		case slotStays:
			run.broken = true
			for _, t := range run.slots[run.next+1:] {
				if t.state == slotRemovable {
					t.state = slotHandedOff
					singles = append(singles, t)
				}
			}
		}
		return singles
	}
	return singles
}

// flush, at the end of a phase, removes every batch that is waiting and the
// handled entries stuck behind one that was not handled (yet).
func (r *remover) flush(ctx context.Context) {
	type job struct {
		subject string
		batch   []*slot
		singles []*slot
	}
	var jobs []job
	r.mu.Lock()
	for _, run := range r.runs {
		j := job{subject: run.subject, batch: run.batch}
		run.batch = nil
		for _, t := range run.slots[run.next:] {
			if t.state == slotRemovable {
				t.state = slotHandedOff
				j.singles = append(j.singles, t)
			}
		}
		if len(j.batch) > 0 || len(j.singles) > 0 {
			jobs = append(jobs, j)
		}
	}
	r.mu.Unlock()
	for _, j := range jobs {
		r.dispatch(ctx, j.subject, j.batch, j.singles)
	}
}

// dispatch removes batch with one PurgeBelow (here) and singles one by one
// (on the delete pool). A batch goes one by one too when the connection
// moved to a server without safe batches since the plan (a reconnect in a
// cluster being upgraded): DeleteBelow would then have to find its entries
// again.
func (r *remover) dispatch(ctx context.Context, subject string, batch, singles []*slot) {
	if len(batch) > 0 && !r.x.f.Reader.BatchDeletes() {
		singles, batch = append(singles, batch...), nil
	}
	for _, s := range singles {
		r.one(ctx, s.p, s.done)
	}
	if len(batch) == 0 {
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err := r.x.f.Reader.PurgeBelow(dctx, subject, batch[len(batch)-1].p.Item.Seq+1)
	if errors.Is(err, dlq.ErrPurgeUnsafe) {
		// The connection moved to an older server since the check above:
		// one by one, by the sequences known here.
		for _, s := range batch {
			r.one(ctx, s.p, s.done)
		}
		return
	}
	for _, s := range batch {
		s.done(err)
	}
}

// one deletes a single entry on the delete pool.
func (r *remover) one(ctx context.Context, p Planned, done func(error)) {
	r.x.deletes <- func() { done(r.x.deleteEntry(ctx, p)) }
}
