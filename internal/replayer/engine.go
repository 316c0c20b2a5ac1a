package replayer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/time/rate"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/dlq"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// ExecOptions tune Execute.
type ExecOptions struct {
	// Rate is replays per second (0: unthrottled).
	Rate float64
	// Concurrency is replays in flight at once (default 1).
	Concurrency int
	// Canary replays this many entries first, waits for their results and
	// halts if any is not completed.
	Canary int
	// Wait waits, at the end, for the result of every replay (up to
	// ResultTimeout).
	Wait bool
	// ResultTimeout bounds the wait for results (canary and Wait).
	ResultTimeout time.Duration
	// HaltRatio and HaltMinResults are the auto-halt rule.
	HaltRatio      float64
	HaltMinResults int // HaltMinResults is the results needed before the rule applies (default 10).
	// CooldownPoll is how often a paused replay checks the cooldown.
	CooldownPoll time.Duration
	// SkipCooling leaves entries whose model cools down in the DLQ instead
	// of waiting (drain mode: the next pass takes them).
	SkipCooling bool
	// Progress receives per-entry lines or a bar (default: nothing).
	Progress io.Writer
	// Terminal draws a bar instead of lines.
	Terminal bool
	// Summary collects the counts (default: a new one).
	Summary *Summary
	// Metrics, if set, is updated.
	Metrics *Metrics
	// Now is the clock (default time.Now).
	Now func() time.Time
	// StalePlan says entries may have left the stream after the plan was
	// read and before Execute (replay sets it when its stream lost
	// messages while its confirmation prompt waited): every replay first
	// checks that its entry is still in the stream, however young the
	// plan (exec.planMayBeStale).
	StalePlan bool

	// afterPublish, in tests, runs after a replay's PubAck and before its
	// DLQ entry is deleted; an error aborts the run there (a crash).
	afterPublish func(p Planned) error
}

// exec is one Execute call.
type exec struct {
	f       *Fleet
	opts    ExecOptions
	prog    *progress
	sum     *Summary
	tr      *tracker
	gate    *gate
	limiter *rate.Limiter

	pauseMu sync.Mutex
	paused  map[string]bool

	// deletes runs the DLQ deletes after PubAcks on a pool of their own, so
	// a replay slot is free again as soon as its publish is acknowledged.
	deletes chan func()
	// rm takes handled entries out of the DLQ, in batches where it can.
	rm *remover

	// inCanary is set while the canary's entries are handled (phases run
	// one after another): only then does a replay first ask whether its
	// invocation completed already (completedBefore). After the canary a
	// replay of a completed invocation is harmless (the worker acks it
	// without running it), and the extra look-up per entry cost a fifth
	// of the bulk replay's speed.
	inCanary bool

	freshMu sync.Mutex
	// fresh holds the sequences of the canary's entries whose own replay
	// was published afresh (not a duplicate): only those are canary
	// replays (exec.canaryIDs).
	fresh map[uint64]bool
}

// Execute carries out a plan: it replays, parks, skips and reports, in plan
// order, Concurrency at a time and at most Rate replays per second, pausing
// while a model's cooldown is open. It returns a *HaltError when a safety
// rule stopped it (the canary failed, the auto-halt rule fired), an error
// wrapping ctx's that says how many entries it handled and left when
// interrupted, and an error when a publish or delete failed. What it did
// is in opts.Summary either way.
func Execute(ctx context.Context, f *Fleet, plan []Planned, opts ExecOptions) (err error) {
	if opts.Concurrency < 1 {
		opts.Concurrency = 1
	}
	if opts.ResultTimeout <= 0 {
		opts.ResultTimeout = 2 * time.Minute
	}
	if opts.HaltRatio <= 0 {
		opts.HaltRatio = 0.5
	}
	if opts.HaltMinResults < 1 {
		opts.HaltMinResults = 10
	}
	if opts.CooldownPoll <= 0 {
		opts.CooldownPoll = time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Summary == nil {
		opts.Summary = NewSummary()
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	x := &exec{f: f, opts: opts, sum: opts.Summary, paused: map[string]bool{}, fresh: map[uint64]bool{},
		prog: newProgress(opts.Progress, opts.Terminal, len(plan), "replay")}
	x.rm = newRemover(x, plan)
	defer x.prog.finish()
	defer func() {
		// Runs after the phases' removals: every entry handled is counted.
		var he *HaltError
		if err != nil && ctx.Err() != nil && !errors.As(err, &he) {
			err = executeInterrupted(len(plan), x.prog.handled(), f.Streams.DLQStream, err)
		}
	}()
	limit := rate.Inf
	if opts.Rate > 0 {
		limit = rate.Limit(opts.Rate)
	}
	// A burst of one: Concurrency bounds the replays in flight, Rate the
	// replays per second from the first one on (a burst of Concurrency sent
	// that many at once at every run's and drain pass's start).
	x.limiter = rate.NewLimiter(limit, 1)
	if f.Stores != nil {
		x.gate = newGate(f.Stores.Cooldown, opts.CooldownPoll, opts.Now, x.onPause)
	}
	x.tr, err = newTracker(f.NC, f.JS, f.Streams.ResultsStream, f.Streams.ResultPrefix, opts.HaltRatio, opts.HaltMinResults, x.onResult)
	if err != nil {
		return err
	}
	defer x.tr.close()
	defer x.countNoResult()

	rest := plan
	if opts.Canary > 0 {
		// The canary is the first opts.Canary replays that were published
		// afresh: a replay an earlier, interrupted run already published
		// comes back a duplicate with no result to wait for, so it does not
		// count, and the canary takes the next entries instead. Neither does
		// an entry whose invocation had already completed, nor one its
		// invocation record shows superseded (a worker took its replay or
		// a newer one already): it is not published
		// (exec.completedBefore), and a canary must be made of replays
		// that run. Each invocation counts once.
		var canary []Planned
		x.inCanary = true
		for len(rest) > 0 {
			need := opts.Canary - len(x.canaryIDs(canary))
			if need <= 0 {
				break
			}
			var chunk []Planned
			i := 0
			for n := 0; i < len(rest) && n < need; i++ {
				chunk = append(chunk, rest[i])
				if rest[i].Action == ActionReplay {
					n++
				}
			}
			rest = rest[i:]
			if err := x.phase(ctx, chunk); err != nil {
				return x.halting(err)
			}
			canary = append(canary, chunk...)
		}
		x.inCanary = false
		if err := x.checkCanary(ctx, canary); err != nil {
			return x.halting(err)
		}
	}
	if err := x.phase(ctx, rest); err != nil {
		return x.halting(err)
	}
	if opts.Wait {
		x.awaitAll(ctx)
	}
	if err := x.tr.halt(); err != nil {
		return x.halting(err)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if t := x.sum.Total(); t.Errors > 0 {
		return fmt.Errorf("%d entries could not be replayed, parked or deleted (see the lines above)", t.Errors)
	}
	return nil
}

func (x *exec) halting(err error) error {
	var he *HaltError
	if errors.As(err, &he) {
		x.opts.Metrics.halt(he.Rule)
		x.prog.note("HALTED (%s): %s", he.Rule, he.Reason)
	}
	return err
}

// phase handles items with Concurrency workers; it stops early on a halt,
// a crash (test hook) or ctx's end.
func (x *exec) phase(ctx context.Context, items []Planned) error {
	work := make(chan Planned)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	stop := make(chan struct{})
	var stopOnce sync.Once
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		stopOnce.Do(func() { close(stop) })
	}
	x.deletes = make(chan func(), 4*x.opts.Concurrency)
	var dwg sync.WaitGroup
	for range 2 * x.opts.Concurrency {
		dwg.Go(func() {
			for d := range x.deletes {
				d()
			}
		})
	}
	defer func() {
		x.rm.flush(ctx)
		close(x.deletes)
		dwg.Wait()
	}()
	for range x.opts.Concurrency {
		wg.Go(func() {
			for p := range work {
				if err := x.handle(ctx, p); err != nil {
					fail(err)
				}
			}
		})
	}
feed:
	for _, p := range items {
		if err := x.tr.halt(); err != nil {
			fail(err)
			break
		}
		select {
		case work <- p:
		case <-stop:
			break feed
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// handle carries out one planned entry.
func (x *exec) handle(ctx context.Context, p Planned) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	class := p.Class()
	switch p.Action {
	case ActionBad:
		x.sum.update(class, func(c *Counts) { c.Bad++ })
		x.opts.Metrics.skipped(class, "bad_entry")
		x.prog.done(p, "BAD ENTRY left in the DLQ: "+p.Why)
		return nil
	case ActionSkip:
		x.sum.update(class, func(c *Counts) { c.Skipped++ })
		reason := "unusable_request"
		if !AutoReplayable(class) {
			reason = "not_auto_replayable"
		}
		x.opts.Metrics.skipped(class, reason)
		x.prog.done(p, "skipped: "+p.Why)
		return nil
	case ActionPark:
		return x.park(ctx, p)
	}
	return x.replay(ctx, p)
}

func (x *exec) park(ctx context.Context, p Planned) error {
	class := p.Class()
	// The entry must still be in the DLQ, whatever the plan's age: no
	// duplicate window keeps a parked copy from outliving a replay, a park
	// or a purge another replayer made since the plan (found in review,
	// twenty-fifth session: a park confirmed at its prompt after another
	// engineer's replay had replayed and deleted the entries copied them
	// all to the parked stream and said PARKED, and a later replay
	// --parked would run their work again). Parks are few (by hand, or
	// replayed replay.max_replays times): one look-up each. A read that
	// fails for another reason parks the entry, as before.
	if entryGone(ctx, x.f.Reader, p.Item.Seq) {
		x.alreadyGone(ctx, p, "not parked")
		return nil
	}
	if err := x.f.Parked.Park(ctx, p.Item, p.Why, x.opts.Now()); err != nil {
		if ctx.Err() != nil {
			// Interrupted: the entry stays, not handled and not an error,
			// as an interrupted replay's (found in review, twenty-fourth
			// session: it was counted an error and "handled").
			x.rm.stay(ctx, p)
			return ctx.Err()
		}
		x.sum.update(class, func(c *Counts) { c.Errors++ })
		x.prog.done(p, "ERROR: "+err.Error())
		x.rm.stay(ctx, p)
		return ctx.Err()
	}
	x.rm.remove(ctx, p, func(err error) {
		if err != nil {
			x.sum.update(class, func(c *Counts) { c.Errors++ })
			x.prog.done(p, "parked, but ERROR deleting the DLQ entry: "+err.Error())
			return
		}
		x.sum.update(class, func(c *Counts) { c.Parked++ })
		x.opts.Metrics.parked(class)
		x.prog.done(p, "parked: "+p.Why)
	})
	return nil
}

func (x *exec) replay(ctx context.Context, p Planned) error {
	e := p.Item.Entry
	if x.opts.SkipCooling {
		// The paused gauge is the drain's too: it holds the model's
		// replays back as surely as a waiting replay does (found in
		// review, eighteenth session: the gauge was never set by drain,
		// the only command that serves /metrics). Metrics keeps it across
		// passes; a pass that finds the cooldown closed clears it.
		until, _ := x.gate.openUntil(ctx, e.Model)
		if e.Model != "" {
			x.opts.Metrics.paused(e.Model, !until.IsZero())
		}
		if !until.IsZero() {
			x.sum.update(e.Class, func(c *Counts) { c.Skipped++ })
			x.opts.Metrics.skipped(e.Class, "cooling_down")
			x.prog.done(p, fmt.Sprintf("skipped: model %s cooling down until %s", e.Model, until.UTC().Format(time.RFC3339)))
			x.rm.stay(ctx, p)
			return nil
		}
	} else if x.gate != nil {
		if err := x.gate.wait(ctx, e.Model); err != nil {
			return err
		}
	}
	if err := x.limiter.Wait(ctx); err != nil {
		return err
	}
	if err := x.tr.halt(); err != nil {
		return err
	}
	// The plan may be older than the requests' duplicate window (a low
	// --rate, a cooldown pause, a canary wait): an entry another replayer
	// replayed and deleted meanwhile would be published again, and not as a
	// duplicate; and after a confirmation prompt, an entry another
	// engineer purged or parked while it waited would be published at all.
	// So the entry must still be there; a read that fails for another
	// reason leaves the decision to the duplicate window, as before.
	if x.planMayBeStale(p) && entryGone(ctx, x.f.Reader, p.Item.Seq) {
		x.alreadyGone(ctx, p, "not published")
		return nil
	}
	// While the canary runs, an invocation that completed already (an
	// earlier run's replay of this entry, which that run did not get to
	// delete) is not replayed:
	// the worker would ack the replay without running it and publish no
	// new result, and the tracker would have nothing fresh to wait for; a
	// canary slot taken by it checked nothing (found in review, eighteenth
	// session: the canary passed on the old "completed" result and the
	// rest went to a provider that still failed). Its entry is handled:
	// it leaves the DLQ.
	//
	// Nor is an entry its invocation record shows superseded: an
	// interrupted run published its replay, which ran and failed again
	// and left a newer entry (found in review, twenty-third session: after
	// the duplicate window the older entry's replay was published afresh,
	// the worker acked it without running it, and the canary halted on a
	// provider that works). It is handled too: counted "already replayed"
	// and removed from the DLQ.
	n := e.ReplayCount + 1
	if x.inCanary {
		completed, at := x.completedBefore(ctx, e)
		if completed {
			x.sum.update(e.Class, func(c *Counts) { c.AlreadyCompleted++ })
			x.rm.remove(ctx, p, func(err error) {
				if err != nil {
					x.sum.update(e.Class, func(c *Counts) { c.Errors++ })
					x.prog.done(p, "invocation already completed (not replayed), but ERROR deleting the DLQ entry: "+err.Error())
					return
				}
				x.prog.done(p, "invocation already completed; not replayed, entry removed from the DLQ")
			})
			return nil
		}
		if at >= n {
			x.sum.update(e.Class, func(c *Counts) { c.AlreadyReplayed++ })
			x.rm.remove(ctx, p, func(err error) {
				what := fmt.Sprintf("superseded (the invocation record is at replay %d, this entry's replay is %d)", at, n)
				if err != nil {
					x.sum.update(e.Class, func(c *Counts) { c.Errors++ })
					x.prog.done(p, what+"; not replayed, but ERROR deleting the DLQ entry: "+err.Error())
					return
				}
				x.prog.done(p, what+"; not replayed, entry removed from the DLQ")
			})
			return nil
		}
	}
	x.tr.expect(e.InvocationID, e.Class, n, x.inCanary)
	ack, err := x.f.JS.PublishMsg(ctx, ReplayItemMsg(x.f.Streams, p.Item), jetstream.WithExpectStream(x.f.Streams.RequestsStream))
	if err != nil {
		x.tr.forget(e.InvocationID, n)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		x.sum.update(e.Class, func(c *Counts) { c.Errors++ })
		x.prog.done(p, "ERROR publishing the replay (entry left in the DLQ): "+err.Error())
		x.rm.stay(ctx, p)
		return nil
	}
	if x.opts.afterPublish != nil {
		if err := x.opts.afterPublish(p); err != nil {
			return err
		}
	}
	// Counted on the PubAck, not after the DLQ delete: Replayed is "a new
	// request stored", which a failed delete does not undo (found in
	// review, eighteenth session: the summary said REPLAYED 0 next to
	// COMPLETED 3). The delete's failure is counted under Errors.
	if ack.Duplicate {
		x.tr.forget(e.InvocationID, n)
		x.sum.update(e.Class, func(c *Counts) { c.AlreadyReplayed++ })
	} else {
		x.sum.update(e.Class, func(c *Counts) { c.Replayed++ })
		x.opts.Metrics.replayed(e.Class, e.Agent)
		if x.inCanary {
			x.freshMu.Lock()
			x.fresh[p.Item.Seq] = true
			x.freshMu.Unlock()
		}
	}
	x.rm.remove(ctx, p, func(err error) { x.afterRemove(p, ack.Duplicate, err) })
	return nil
}

// planMayBeStale reports whether p was planned long enough ago that a
// replay another replayer published meanwhile may be outside the requests'
// duplicate window: half the window, or always when the window is unknown.
// A younger plan needs no look-up: the server drops a second publish of
// the same replay as a duplicate, and the look-up, a round trip per entry,
// halved the bulk replay's speed (found in review, eighteenth session:
// 0.30 of a bare publish against the 0.5 goal; 0.64 without it).
//
// A plan read before a confirmation prompt may be stale however young:
// while the prompt waited another engineer may have purged or parked its
// entries, which leaves no replay for the duplicate window to drop (found
// in review, twenty-fifth session: a replay confirmed after a purge
// republished the purged entries). replay decides that once, from the
// stream's state before the plan and after the prompt
// (streamMark.nothingRemovedSince), and sets ExecOptions.StalePlan only
// when the stream lost messages meanwhile: only then does every replay
// pay the look-up.
func (x *exec) planMayBeStale(p Planned) bool {
	if x.opts.StalePlan || p.at.IsZero() || x.f.reqDups <= 0 {
		return true
	}
	return time.Since(p.at) > x.f.reqDups/2
}

// alreadyGone reports p, found gone from its stream before this run reached
// it (another replayer replayed, parked or purged it), as AlreadyGone; what
// says what this run did not do. The remover still takes p (its delete
// finds the entry gone), so that the batches of p's subject go on past it.
func (x *exec) alreadyGone(ctx context.Context, p Planned, what string) {
	class := p.Class()
	msg := "gone from " + x.f.Streams.DLQStream + " before this run reached it (another replayer replayed, parked or purged it); " + what
	x.rm.remove(ctx, p, func(err error) {
		if err != nil {
			x.sum.update(class, func(c *Counts) { c.Errors++ })
			x.prog.done(p, msg+", but ERROR deleting the entry: "+err.Error())
			return
		}
		x.sum.update(class, func(c *Counts) { c.AlreadyGone++ })
		x.prog.done(p, msg)
	})
}

// entryGone reports whether the DLQ entry at seq was deleted; a read that
// fails for another reason leaves the decision to the duplicate window.
func entryGone(ctx context.Context, r *dlq.Reader, seq uint64) bool {
	gone, _ := r.Gone(ctx, seq)
	return gone
}

// afterRemove reports a replayed entry (counted already) once the remover
// took it out of the DLQ (err nil) or failed to (counted under Errors).
func (x *exec) afterRemove(p Planned, duplicate bool, err error) {
	e := p.Item.Entry
	if err != nil {
		x.sum.update(e.Class, func(c *Counts) { c.Errors++ })
		what := "replayed"
		if duplicate {
			what = "already replayed (not published again)"
		}
		// A rerun after the requests' duplicate window publishes the
		// replay again (the server no longer drops it); the worker's
		// invocation record keeps the work from running twice.
		x.prog.done(p, what+", but ERROR deleting the DLQ entry (it stays there; the worker's invocation record keeps a rerun from running it twice): "+err.Error())
		return
	}
	if duplicate {
		x.prog.done(p, "already replayed ("+ItemReplayMsgID(p.Item)+" was published before); not published again")
		return
	}
	x.prog.done(p, "replayed")
}

// completedBefore reports whether e's invocation had completed before this
// replay: the worker's invocation record says so (when the fleet was opened
// with stores), or, without a record, its last stored result. A record
// that says otherwise decides; a look-up that fails says no (the replay is
// published, and the worker's record still keeps it from running twice).
// An entry whose invocation id was derived (dlq.IsDerived) is never taken
// for one: a producer's invocation may carry the same id.
//
// at is the replay count the record shows (-1 without a readable record):
// at or above e's next replay count (e.ReplayCount+1) the entry is
// superseded, as a worker took its replay or a newer one already, and
// publishing it would prove nothing: once the record has finished, the
// worker acks a replay at or below its count without running it; while it
// is still running, the replay in flight (the one the record counts)
// finishes or dead-letters by itself, leaving a newer entry if it fails.
func (x *exec) completedBefore(ctx context.Context, e *dlq.Entry) (completed bool, at int) {
	if dlq.IsDerived(e) {
		return false, -1
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if x.f.Stores != nil && x.f.Stores.Invocations != nil {
		rec, err := x.f.Stores.Invocations.Get(cctx, e.InvocationID)
		if err == nil {
			at = -1
			if r, err := worker.DecodeRecord(rec); err == nil {
				at = r.ReplayCount
			}
			return rec.Status == session.InvocationCompleted, at
		}
	}
	if x.f.Client == nil {
		return false, -1
	}
	st, err := x.f.Client.Lookup(cctx, e.InvocationID)
	return err == nil && st.Status == envelope.StatusCompleted, -1
}

// deleteEntry removes a handled entry from the DLQ. It finishes even when
// ctx ends (an interrupted run leaves no half-done entry behind); an entry
// another replayer deleted first is not an error.
func (x *exec) deleteEntry(ctx context.Context, p Planned) error {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err := x.f.Reader.Delete(dctx, p.Item.Seq)
	if err == nil {
		return nil
	}
	if gone, _ := x.f.Reader.Gone(dctx, p.Item.Seq); gone {
		return nil
	}
	return err
}

func (x *exec) onPause(model string, until time.Time) {
	x.pauseMu.Lock()
	defer x.pauseMu.Unlock()
	switch {
	case !until.IsZero() && !x.paused[model]:
		x.paused[model] = true
		x.opts.Metrics.paused(model, true)
		x.prog.note("PAUSED: model %s is cooling down fleet-wide until %s; replays of it wait", model, until.UTC().Format(time.RFC3339))
	case until.IsZero() && x.paused[model]:
		x.paused[model] = false
		x.opts.Metrics.paused(model, false)
		x.prog.note("RESUMED: model %s cooldown closed", model)
	}
}

func (x *exec) onResult(id, class string, st envelope.Status) {
	x.sum.result(class, st)
	x.opts.Metrics.result(class, string(st))
	if st != envelope.StatusCompleted {
		x.prog.note("result: %s %s came back %s", id, class, st)
	}
}

// canaryIDs are the distinct invocations of the canary entries whose own
// replay was published afresh (a result is awaited or came back). An
// entry whose replay came back a duplicate does not count even when a
// newer entry of its invocation was published afresh (found in review,
// twenty-third session: the two counted as two canary replays, and one
// real replay was checked twice).
func (x *exec) canaryIDs(canary []Planned) []string {
	x.freshMu.Lock()
	defer x.freshMu.Unlock()
	var ids []string
	seen := map[string]bool{}
	for _, p := range canary {
		if p.Action != ActionReplay || !x.fresh[p.Item.Seq] {
			continue
		}
		if id := p.Item.Entry.InvocationID; !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids
}

// checkCanary waits for the canary replays' results, all within one
// ResultTimeout, and halts unless all completed. With no fresh replay in
// the canary (the whole plan was published by an earlier run, completed or
// superseded already, or every publish failed) there is nothing to check
// and nothing left to replay.
func (x *exec) checkCanary(ctx context.Context, canary []Planned) error {
	ids := x.canaryIDs(canary)
	if len(ids) == 0 {
		x.prog.note("canary: no replay was published afresh (duplicates of an earlier run's, invocations already completed, entries superseded by a newer replay, or publish errors); nothing is left to replay")
		return nil
	}
	x.prog.note("canary: waiting up to %s for the results of %d replays", x.opts.ResultTimeout, len(ids))
	deadline := time.Now().Add(x.opts.ResultTimeout)
	bad := 0
	var first string
	for _, id := range ids {
		res := x.tr.await(ctx, id, max(time.Until(deadline), time.Millisecond))
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if res == nil || res.Status != envelope.StatusCompleted {
			bad++
			if first == "" {
				if res == nil {
					first = id + ": no result within " + x.opts.ResultTimeout.String()
				} else {
					first = fmt.Sprintf("%s: %s %s", id, res.Status, res.ErrorClass)
				}
			}
		}
	}
	if bad > 0 {
		return &HaltError{Rule: RuleCanary, Reason: fmt.Sprintf("%d of %d canary replays did not complete (first: %s); the rest were not replayed", bad, len(ids), first)}
	}
	x.prog.note("canary: %d of %d completed; replaying the rest", len(ids), len(ids))
	return nil
}

// awaitAll waits for every outstanding result, all within one
// ResultTimeout.
func (x *exec) awaitAll(ctx context.Context) {
	ids := x.tr.waiting()
	if len(ids) == 0 {
		return
	}
	x.prog.note("waiting up to %s for %d results", x.opts.ResultTimeout, len(ids))
	deadline := x.opts.Now().Add(x.opts.ResultTimeout)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for _, id := range ids {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			x.tr.await(ctx, id, max(time.Until(deadline), time.Millisecond))
		})
	}
	wg.Wait()
}

// countNoResult adds the replays without a result to the summary.
func (x *exec) countNoResult() {
	x.tr.mu.Lock()
	defer x.tr.mu.Unlock()
	for _, w := range x.tr.pending {
		if w.res == nil {
			x.sum.update(w.class, func(c *Counts) { c.NoResult++ })
		}
	}
}
