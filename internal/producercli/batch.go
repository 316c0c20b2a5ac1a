package producercli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/envelope"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Outcome is what became of one batch line.
type Outcome string

// Outcomes of a batch line. The three result statuses are the worker's;
// the others are the batch's own.
const (
	OutcomeCompleted    = Outcome(envelope.StatusCompleted)
	OutcomeFailed       = Outcome(envelope.StatusFailed)
	OutcomeDeadLettered = Outcome(envelope.StatusDeadLettered)
	// OutcomeSkipped: the invocation already has a completed result; it was
	// not submitted again.
	OutcomeSkipped Outcome = "skipped (already completed)"
	// OutcomeDuplicateLine: an earlier line of the file has the same request
	// under the same invocation id. (A different request under an earlier
	// line's id is OutcomeInvalid: it would never run.)
	OutcomeDuplicateLine Outcome = "skipped (duplicate line)"
	// OutcomeInvalid: the line is not a valid request, or reuses an earlier
	// line's invocation id for a different request.
	OutcomeInvalid Outcome = "invalid"
	// OutcomeTimeout: no result within the timeout.
	OutcomeTimeout Outcome = "timeout"
	// OutcomeError: the submission or the look-up failed.
	OutcomeError Outcome = "error"
	// OutcomeCanceled: the batch was interrupted first.
	OutcomeCanceled Outcome = "canceled"
	// OutcomeHeld: not sent, because an earlier line of its session ended
	// without a final result (timed out, failed to be sent or looked up,
	// canceled, invalid, refused as BAD_INPUT): sent now, it could run before that line, which
	// may still be queued or be sent again by a rerun. Err names the
	// line. A rerun sends it in order (the earlier line is looked up
	// first, and skipped once completed).
	OutcomeHeld Outcome = "held"
)

// ok reports whether the outcome counts as done for the exit code.
func (o Outcome) ok() bool {
	return o == OutcomeCompleted || o == OutcomeSkipped || o == OutcomeDuplicateLine
}

// final reports whether a line ended with its invocation's final result,
// this run's or a stored one: only then may the session's next line be
// sent. A BAD_INPUT refusal is a result but not a final one: a rerun sends
// the line again (client.StoredResult.Final), after the lines behind it had
// run (found in review, twenty-fourth session).
func (r LineResult) final() bool {
	switch r.Outcome {
	case OutcomeCompleted, OutcomeSkipped, OutcomeDeadLettered:
		return true
	case OutcomeFailed:
		return r.Class != string(taxonomy.BadInput)
	}
	return false
}

// LineResult is the outcome of one line.
type LineResult struct {
	// Line is the 1-based line number in the file.
	Line int
	// InvocationID is the line's invocation id ("" for an invalid line).
	InvocationID string
	// Outcome is what became of the line.
	Outcome Outcome
	// Class is the result's error class, if any.
	Class string
	// Submitted is set when the request was published (also when the server
	// reported it as a duplicate).
	Submitted bool
	// Duplicate is set when the server already had the request.
	Duplicate bool
	// Earlier is set when the outcome is a dead-lettered or failed result
	// stored before this run: the line was not sent again, or (a BAD_INPUT
	// refusal, Duplicate also set) sent again inside the requests stream's
	// duplicate window, which dropped it.
	Earlier bool
	// Err is the error of OutcomeInvalid, OutcomeError, OutcomeTimeout,
	// and names the line OutcomeHeld waited for.
	Err error
}

// BatchOptions configures RunBatch.
type BatchOptions struct {
	// Rate limits submissions per second; 0 means unlimited.
	Rate float64
	// Concurrency is how many invocations are in flight at once (submitted
	// and awaited); default 1. At most one of them is of each (agent,
	// user, session): the fleet runs a session's invocations one at a time.
	Concurrency int
	// Timeout bounds the wait for each result (default DefaultTimeout).
	Timeout time.Duration
	// Progress is told about each line (nil: nothing).
	Progress Progress
}

// RunBatch submits the lines and awaits their results, Concurrency at a
// time and at most Rate submissions per second. Before submitting, it looks
// up each invocation's stored result: a completed one is reported as
// OutcomeSkipped and not submitted, so running the same file again runs
// nothing that completed (the invocation ids are stable, see ParseBatch).
// A stored result that is dead-lettered or failed is the outcome too (Earlier
// set, not submitted): the worker does not run a finished invocation again
// for a resubmission, so its rerun is a replay from the DLQ (dlq-replayer
// replay); WriteSummary says so. A stored BAD_INPUT refusal is the
// exception: the worker refused it before it recorded anything, so the
// line is sent again and its new result is the outcome (client.AwaitSent).
// One line per (agent, user, session) is in flight at a time, and a
// session's lines run in file order: a later line of a session waits for
// the one before it, and a free slot goes to the next line of another
// session (the fleet runs a session's invocations one at a time, so a run
// of one session's lines would otherwise hold every slot, each waiting
// for the one before it). A line that ends without a result (timeout,
// error, canceled, or invalid once sent: it may still be queued, or will
// be sent again by a rerun) holds its session's later lines: they are not
// sent, and are OutcomeHeld, so that no turn of a conversation runs before
// the one before it (found in review, twenty-fourth session: after a
// timeout the next turn was sent at once, and once the fleet was back
// its workers ran them in either order). A line refused as BAD_INPUT
// holds them too (a rerun sends it again), and so does a line whose id is
// an earlier line's for another request (it is sent once given its own
// id), and an invalid line whose JSON names its agent, user and session
// (too large, longer than a line may be, not valid UTF-8, failing
// validation, ...: it is sent once fixed; found in review, twenty-fifth
// session). A line whose JSON does not decode, or names no session (or
// one with a byte that is not UTF-8), has no session to hold; a repeated
// line holds nothing (its first copy is the one that runs).
// The returned results are in line order; RunBatch fails only when ctx ends
// (the rest are OutcomeCanceled).
func RunBatch(ctx context.Context, c *client.Client, lines []Line, opts BatchOptions) ([]LineResult, error) {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 1
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	limit := rate.Inf
	if opts.Rate > 0 {
		limit = rate.Limit(opts.Rate)
	}
	limiter := rate.NewLimiter(limit, 1)
	prog := opts.Progress
	if prog == nil {
		prog = nopProgress{}
	}
	prog.Start(len(lines))
	defer prog.Finish()

	results := make([]LineResult, len(lines))
	var mu sync.Mutex // serialises prog.Done
	report := func(i int, r LineResult) {
		results[i] = r
		mu.Lock()
		defer mu.Unlock()
		prog.Done(r)
	}

	// Lines whose id appeared on an earlier line are not submitted again.
	type firstLine struct {
		no  int
		req []byte // its request, encoded
	}
	seen := map[string]firstLine{}
	// A session in flight has an entry in waiting: its lines still to run,
	// in file order. The slot running the session's line runs them next
	// (one at a time) and removes the entry when none is left, so a waiting
	// line holds no slot and does not spin.
	var smu sync.Mutex
	waiting := map[sessionKey][]int{}
	// heldBy is, for a session whose line ended without a result, that
	// line's number: the session's later lines are held.
	heldBy := map[sessionKey]int{}
	// conflict holds the result of a line whose id is an earlier line's
	// for another request, or of an invalid line that names its session,
	// queued behind its session's line in flight: it holds the session's
	// later lines when its turn comes, not the earlier ones queued before
	// it.
	conflict := map[int]LineResult{}
	// invalidInSession reports r, the result of line i that cannot be sent,
	// and holds the later lines of its session k: now, or in its turn
	// when a line of the session is in flight.
	invalidInSession := func(i int, k sessionKey, r LineResult) {
		smu.Lock()
		if q, busy := waiting[k]; busy {
			conflict[i] = r // reported, and holding, in its turn
			waiting[k] = append(q, i)
			smu.Unlock()
			return
		}
		if _, isHeld := heldBy[k]; !isHeld {
			heldBy[k] = lines[i].No
		}
		smu.Unlock()
		report(i, r)
	}
	held := func(l Line, by int) LineResult {
		return LineResult{Line: l.No, InvocationID: l.Request.InvocationID, Outcome: OutcomeHeld,
			Err: fmt.Errorf("line %d of its session has no result", by)}
	}
	work := make(chan int)
	var wg sync.WaitGroup
	for range opts.Concurrency {
		wg.Go(func() {
			for i := range work {
				k := keyOf(lines[i])
				for {
					smu.Lock()
					by, isHeld := heldBy[k]
					cr, isConflict := conflict[i]
					smu.Unlock()
					var r LineResult
					switch {
					case isConflict && lines[i].Err != nil:
						r = cr // invalid whatever else happens, as in the file's loop
					case ctx.Err() != nil:
						r = LineResult{Line: lines[i].No, InvocationID: lines[i].Request.InvocationID, Outcome: OutcomeCanceled}
					case isConflict:
						r = cr
					case isHeld:
						r = held(lines[i], by)
					default:
						r = runLine(ctx, c, lines[i], limiter, opts.Timeout)
					}
					report(i, r)
					smu.Lock()
					if !isHeld && !r.final() {
						heldBy[k] = lines[i].No // before the session leaves waiting
					}
					q := waiting[k]
					if len(q) == 0 {
						delete(waiting, k)
						smu.Unlock()
						break
					}
					i, waiting[k] = q[0], q[1:]
					smu.Unlock()
				}
			}
		})
	}
	for i, l := range lines {
		switch {
		case l.Err != nil:
			r := LineResult{Line: l.No, Outcome: OutcomeInvalid, Err: l.Err}
			if l.session == (sessionKey{}) {
				report(i, r) // no session known: none to hold
			} else {
				invalidInSession(i, l.session, r)
			}
			continue
		case ctx.Err() != nil:
			report(i, LineResult{Line: l.No, InvocationID: l.Request.InvocationID, Outcome: OutcomeCanceled})
			continue
		}
		id := l.Request.InvocationID
		enc, _ := l.Request.Encode() // parsed and validated: encodes (a failure compares as different)
		if first, dup := seen[id]; dup {
			if enc == nil || !bytes.Equal(enc, first.req) {
				// Not a repeat: a second request under the id, which the
				// stream's duplicate window would drop unseen.
				invalidInSession(i, keyOf(l), LineResult{Line: l.No, InvocationID: id, Outcome: OutcomeInvalid,
					Err: fmt.Errorf("invocation id %s is line %d's, for a different request: give this one its own id", id, first.no)})
				continue
			}
			report(i, LineResult{Line: l.No, InvocationID: id, Outcome: OutcomeDuplicateLine,
				Err: fmt.Errorf("same request and invocation id as line %d", first.no)})
			continue
		}
		seen[id] = firstLine{no: l.No, req: enc}
		k := keyOf(l)
		smu.Lock()
		if q, busy := waiting[k]; busy {
			waiting[k] = append(q, i) // run by the slot of the session's line in flight
			smu.Unlock()
			continue
		}
		if by, isHeld := heldBy[k]; isHeld {
			smu.Unlock()
			report(i, held(l, by))
			continue
		}
		waiting[k] = nil
		smu.Unlock()
		select {
		case work <- i:
		case <-ctx.Done():
			smu.Lock()
			delete(waiting, k) // nothing was queued behind it: the queue is filled here only
			smu.Unlock()
			report(i, LineResult{Line: l.No, InvocationID: id, Outcome: OutcomeCanceled})
		}
	}
	close(work)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return results, fmt.Errorf("batch interrupted: %w", err)
	}
	return results, nil
}

// sessionKey is the session a request runs in: the fleet runs one
// session's invocations one at a time.
type sessionKey struct{ agent, user, session string }

// keyOf is the session of a valid line, or of an invalid one that names
// it (Line.session).
func keyOf(l Line) sessionKey {
	if l.Request == nil {
		return l.session
	}
	return sessionKey{agent: l.Request.Agent, user: l.Request.UserID, session: l.Request.SessionID}
}

// runLine does one line: look up, submit, await.
func runLine(ctx context.Context, c *client.Client, l Line, limiter *rate.Limiter, timeout time.Duration) LineResult {
	id := l.Request.InvocationID
	r := LineResult{Line: l.No, InvocationID: id}
	fail := func(err error) LineResult {
		r.Err = err
		switch {
		case ctx.Err() != nil:
			r.Outcome = OutcomeCanceled
		case asInvalid(err):
			r.Outcome = OutcomeInvalid // refused before it was sent (its size with its headers)
		case errors.As(err, new(*client.PublishError)):
			r.Outcome = OutcomeError // a publish failed, also when its PubAck timed out
		case errors.Is(err, context.DeadlineExceeded):
			r.Outcome = OutcomeTimeout
		default:
			r.Outcome = OutcomeError
		}
		return r
	}
	stored, err := lookup(ctx, c, id, timeout)
	switch {
	case err == nil && stored.Status == envelope.StatusCompleted:
		r.Outcome, r.Class = OutcomeSkipped, stored.ErrorClass
		return r
	case err == nil && !stored.Final():
		// Refused as BAD_INPUT before (an agent not deployed yet, a size
		// limit): the worker refused it before it wrote any record, so a
		// resubmission runs, and the runbook's remedy ("fix it, purge
		// them; the producer sends them again") is this rerun. It used to
		// be reported as an earlier failure for ever (found in review,
		// eighteenth session). Sent again below; AwaitSent awaits the
		// result that follows the refusal.
	case err == nil:
		// Dead-lettered or failed before: a resubmission would not run it
		// again (the worker answers a finished invocation from its record
		// and publishes nothing new), so awaiting a newer result would
		// only wait out the timeout. The stored result is the outcome; a
		// rerun is a replay from the DLQ.
		r.Outcome, r.Class, r.Earlier = Outcome(stored.Status), stored.ErrorClass, true
		return r
	case errors.Is(err, client.ErrNoResult):
		stored = nil
	default:
		return fail(err)
	}
	if err := limiter.Wait(ctx); err != nil {
		return fail(err)
	}
	// Sent again while a NATS outage explains a failed publish, for at
	// most the line's timeout (it failed as "error" at the first lost
	// PubAck; left open in the twentieth session).
	rec, err := publish(ctx, c, l.Request, limiter, timeout)
	if err != nil {
		return fail(err)
	}
	r.Submitted, r.Duplicate = true, rec.Duplicate
	// No result was stored when we looked: the next one is the outcome
	// (also for a duplicate the server still had in its window: its
	// result is still to come, or Await finds it stored). After a stored
	// BAD_INPUT refusal, the result that follows it; but a resend the
	// server dropped as a duplicate (the refused request is still in the
	// requests stream's duplicate window) gets no new result: the stored
	// one is the outcome (Earlier and Duplicate set), and WriteSummary says
	// to wait the window out.
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := c.AwaitSent(actx, rec, stored)
	if err != nil {
		return fail(err)
	}
	// Earlier only when the answer is the stored refusal, or a refusal
	// again: the resend was dropped either way. A duplicate of a later
	// resend that ran gets that resend's result (client.AwaitSent).
	r.Outcome, r.Class = Outcome(res.Status), res.ErrorClass
	r.Earlier = stored != nil && rec.Duplicate &&
		(res == stored.Result || (&client.StoredResult{Result: res}).RefusedAsBadInput())
	return r
}
