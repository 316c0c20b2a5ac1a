package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/support"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/redissession"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/dlq"
	"github.com/agentfleet/agentfleet/pkg/envelope"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// refundsKey is the demo refunds list (internal/support.RefundsKey with the
// default empty prefix).
const refundsKey = "demo:refunds"

// invocationPrefix is the worker's default Redis key prefix (redis.prefix).
const invocationPrefix = "af:"

// refundRecord is one demo:refunds record.
type refundRecord struct {
	InvocationID string `json:"invocation_id"`
	OrderID      string `json:"order_id"`
	AmountCents  int    `json:"amount_cents"`
}

// lookupAll reads the last result of every id from AGENT_RESULTS.
func lookupAll(ctx context.Context, cl *client.Client, ids []string) (map[string]*client.StoredResult, map[string]error) {
	var mu sync.Mutex
	res, errs := map[string]*client.StoredResult{}, map[string]error{}
	work := make(chan string)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				var r *client.StoredResult
				var err error
				for attempt := 0; attempt < 5; attempt++ {
					lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
					r, err = cl.Lookup(lctx, id)
					cancel()
					if err == nil || errors.Is(err, client.ErrNoResult) || errors.Is(err, client.ErrBadResult) || ctx.Err() != nil {
						break
					}
					time.Sleep(200 * time.Millisecond)
				}
				mu.Lock()
				if err != nil {
					errs[id] = err
				} else {
					res[id] = r
				}
				mu.Unlock()
			}
		}()
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
	return res, errs
}

// recordStatus maps a result status to the invocation record's.
func recordStatus(s envelope.Status) session.InvocationStatus {
	switch s {
	case envelope.StatusCompleted:
		return session.InvocationCompleted
	case envelope.StatusDeadLettered:
		return session.InvocationDeadLettered
	case envelope.StatusFailed:
		return session.InvocationFailed
	}
	return ""
}

// check reads the results, the DLQ, the invocation records and
// demo:refunds and fills in the report's counts and violations.
func (h *Harness) check(ctx context.Context, cl *client.Client, t *tracker, rep *Report) error {
	rep.Invocations = len(t.ids)
	rep.Final = map[string]int{}
	inRun := t.index

	results, lookErrs := lookupAll(ctx, cl, t.ids)
	_, all, bad, err := h.latestEntries(ctx)
	if err != nil {
		return err
	}
	invs, err := redissession.NewInvocations(h.rdb, redissession.Config{Prefix: invocationPrefix})
	if err != nil {
		return fmt.Errorf("chaos: invocation records: %w", err)
	}
	// The classes the run's faults can end an invocation with (the
	// harness's configuration, the one the workers ran with).
	allowed, err := failureClasses(h.cfg.ModelFaults)
	if err != nil {
		return err
	}
	rep.FailureClasses = classNames(allowed)

	for _, id := range t.ids {
		t.mu.Lock()
		submitted := t.submitted[id]
		t.mu.Unlock()
		if submitted {
			rep.Submitted++
		}
		r, ok := results[id]
		if !ok {
			err := lookErrs[id]
			switch {
			case !submitted:
				rep.NotSubmitted.add(id)
			case errors.Is(err, client.ErrBadResult):
				rep.BadResults.add(id)
			default:
				rep.Lost.add(id)
			}
			continue
		}
		if r.InvocationID != id {
			// The result stored under id is another invocation's (a worker
			// published it on id's subject): id's user was handed another
			// request's answer and id's own ending is nowhere. Found in
			// review, twenty-second session: it was counted as id's, so
			// one ending passed for two requests.
			rep.MisaddressedResults.add(fmt.Sprintf("%s (result of %s, %s)", id, orDash(r.InvocationID), r.Status))
			delete(results, id)
			continue
		}
		key := string(r.Status)
		if r.ErrorClass != "" {
			key += " " + r.ErrorClass
		}
		rep.Final[key]++
		if r.Status != envelope.StatusCompleted && len(all[id]) == 0 {
			rep.NotInDLQ.add(id)
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		rec, err := invs.Get(rctx, id)
		cancel()
		switch {
		case err == nil && rec.Status == recordStatus(r.Status):
		case err == nil:
			rep.RecordMismatch.add(fmt.Sprintf("%s (result %s, record %s)", id, r.Status, rec.Status))
		case errors.Is(err, session.ErrInvocationNotFound):
			rep.RecordMismatch.add(id + " (no record)")
		default:
			return fmt.Errorf("chaos: invocation record %s: %w", id, err)
		}
		// Transient: any entry whose class the taxonomy replays, decided
		// from the class, not from the Retryable flag the worker under test
		// wrote (a flag that disagrees with its class is a violation of its
		// own). After a replay the invocation must have completed.
		//
		// A last result that told the producer "queued" (dead_lettered
		// with a class the taxonomy replays) makes the invocation
		// transient too, whatever its entries say: an entry of another
		// class would otherwise leave it queued for ever with the
		// invariant holding vacuously.
		transient := r.Status == envelope.StatusDeadLettered && taxonomy.PolicyFor(taxonomy.Class(r.ErrorClass)).AutoReplay
		var entries []*dlq.Item      // the invocation's entries, before the replay or at the end
		seenSeq := map[uint64]bool{} // an entry still there after the replay is in both lists
		for _, it := range append(append([]*dlq.Item(nil), rep.beforeReplay[id]...), all[id]...) {
			if !seenSeq[it.Seq] {
				seenSeq[it.Seq] = true
				entries = append(entries, it)
			}
		}
		if r.Status != envelope.StatusCompleted {
			checkClasses(rep, id, r, entries, allowed)
		} else {
			checkTwoEndings(rep, id, all[id])
		}
		for _, it := range entries {
			auto := taxonomy.PolicyFor(taxonomy.Class(it.Entry.Class)).AutoReplay
			transient = transient || auto || it.Entry.Retryable
			if auto != it.Entry.Retryable {
				rep.RetryableMismatch.add(fmt.Sprintf("%s (seq %d: class %s, retryable %v)", id, it.Seq, it.Entry.Class, it.Entry.Retryable))
			}
		}
		if transient {
			rep.Transient++
			if r.Status == envelope.StatusCompleted {
				rep.TransientCompleted++
			} else if rep.ReplayMode != "" {
				rep.TransientNotCompleted.add(fmt.Sprintf("%s (%s %s)", id, r.Status, r.ErrorClass))
			}
		}
	}

	// Entries before the replay: the snapshot the replay phase took (the
	// replayer may delete what it replayed), or, without a replay, the end.
	before := rep.beforeReplay
	if before == nil {
		before = all
	}
	rep.DLQByClass, rep.DLQAfterByClass = map[string]int{}, map[string]int{}
	// Foreign entries are counted from the snapshot and from the end, each
	// stream sequence once: found in review, eighteenth session, an entry
	// written during the replay phase (after the snapshot) under an id the
	// run never submitted was skipped unseen.
	foreignSeq := map[uint64]bool{}
	countForeign := func(items []*dlq.Item) {
		for _, it := range items {
			if !foreignSeq[it.Seq] {
				foreignSeq[it.Seq] = true
				rep.DLQForeign++
			}
		}
	}
	for id, items := range before {
		if _, ok := inRun[id]; !ok {
			countForeign(items)
			continue
		}
		rep.DLQInvocations++
		for _, it := range items {
			rep.DLQEntries++
			rep.DLQByClass[it.Entry.Class]++
		}
	}
	for id, items := range all {
		if _, ok := inRun[id]; !ok {
			countForeign(items)
			continue
		}
		rep.DLQAfterInvocations++
		for _, it := range items {
			rep.DLQAfterEntries++
			rep.DLQAfterByClass[it.Entry.Class]++
		}
	}
	for _, it := range bad {
		rep.BadDLQEntries.add(fmt.Sprintf("seq %d: %v", it.Seq, it.Err))
	}

	if err := h.checkRefunds(ctx, rep, inRun); err != nil {
		return err
	}
	// A completed result followed by a different one, in the live history
	// or between the live history and the last stored result (found in
	// review, twenty-second session: the stored one, which the live
	// subscription may have missed during a NATS restart, was never held
	// to the live history, so "completed" then "dead_lettered" passed).
	for _, id := range t.ids {
		if c, ok := t.contradiction(id); ok {
			rep.Contradictions.add(c)
		} else if r, ok := results[id]; ok && r.Status != envelope.StatusCompleted && t.completedLive(id) {
			last := string(r.Status)
			if r.ErrorClass != "" {
				last += " " + r.ErrorClass
			}
			rep.Contradictions.add(fmt.Sprintf("%s (live %s, last stored %s)", id, t.historyString(id), last))
		}
	}
	rep.LiveResults = t.live

	// Results under ids the run never submitted: the run's NATS is its
	// own, so a worker made them up (an id lost or mangled on the way).
	rs, err := h.js.Stream(ctx, client.DefaultResultsStream)
	if err != nil {
		return fmt.Errorf("chaos: results stream: %w", err)
	}
	info, err := rs.Info(ctx, jetstream.WithSubjectFilter(envelope.ResultSubject(envelope.DefaultResultPrefix, "*")))
	if err != nil {
		return fmt.Errorf("chaos: results stream subjects: %w", err)
	}
	prefix := envelope.ResultSubject(envelope.DefaultResultPrefix, "")
	for subj, n := range info.State.Subjects {
		if id := strings.TrimPrefix(subj, prefix); id != subj {
			if _, ok := inRun[id]; !ok {
				rep.ForeignResults.add(fmt.Sprintf("%s (%d results)", id, n))
			}
		}
	}
	return nil
}

// checkClasses records, for an invocation that did not complete, a result
// or DLQ entry whose failure class the run's faults cannot produce
// (faultEndings): found in review, nineteenth session, a fleet that
// classified every simulated 503 as UNKNOWN (dead-lettered for review,
// never replayed) passed, the invocations' result, entry and record
// agreeing with each other, and "every transient entry completed after
// the replay" holding vacuously. It holds with the replay off too: the
// classes are the faults', not the replay's.
func checkClasses(rep *Report, id string, r *client.StoredResult, entries []*dlq.Item, allowed map[taxonomy.Class]bool) {
	var bad []string
	if !allowed[taxonomy.Class(r.ErrorClass)] {
		bad = append(bad, fmt.Sprintf("result %s %s", r.Status, orDash(r.ErrorClass)))
	}
	for _, it := range entries {
		if !allowed[taxonomy.Class(it.Entry.Class)] {
			bad = append(bad, fmt.Sprintf("entry seq %d %s: %s", it.Seq, orDash(it.Entry.Class), clip(it.Entry.Reason, 100)))
		}
	}
	if len(bad) > 0 {
		rep.Misclassified.add(fmt.Sprintf("%s (%s)", id, strings.Join(bad, "; ")))
	}
}

// checkTwoEndings records a completed invocation that still has a DLQ
// entry at the end (left: the entries read then): it ended twice, the user
// answered and the on-call handed a failure to review for the same
// request (found in review, nineteenth session). After a replay no entry
// of a completed invocation is legitimately left: the replayer takes every
// auto-replayable entry stored before it started and deletes it after the
// replay's PubAck (the worker acks a replay of a completed invocation
// without running it), and it exits only once its deletes are done (a
// failed one is its exit code, a violation of its own); the faults are off
// while it runs, so no new entry is due. Without a replay only the entries
// a replay would leave count: those of the classes the taxonomy never
// replays automatically. A transient entry of a completed invocation is
// legitimate then (a worker killed between the entry and the record, its
// redelivery completing the invocation), and the replay removes it.
func checkTwoEndings(rep *Report, id string, left []*dlq.Item) {
	var kept []string
	for _, it := range left {
		if rep.ReplayMode != "" || !taxonomy.PolicyFor(taxonomy.Class(it.Entry.Class)).AutoReplay {
			kept = append(kept, fmt.Sprintf("seq %d %s", it.Seq, orDash(it.Entry.Class)))
		}
	}
	if len(kept) > 0 {
		rep.TwoEndings.add(fmt.Sprintf("%s (%s)", id, strings.Join(kept, ", ")))
	}
}

// checkRefunds reads demo:refunds and records the effects' counts and
// violations. Each request asks for one refund of one order
// (requestOrder), so a run invocation has at most one refund record, on
// that order: found in review, nineteenth session, duplicates were counted
// per (invocation, order), so a second refund of another order (a session
// mixed up with another invocation's) and a refund of an order the request
// never named both passed.
func (h *Harness) checkRefunds(ctx context.Context, rep *Report, inRun map[string]int) error {
	raw, err := h.rdb.LRange(ctx, refundsKey, 0, -1).Result()
	if err != nil {
		return fmt.Errorf("chaos: read %s: %w", refundsKey, err)
	}
	foreignPairs, runPairs := map[string]int{}, map[string]bool{}
	orders := map[string][]string{} // run invocation → the orders of its records
	for _, s := range raw {
		var rf refundRecord
		if err := json.Unmarshal([]byte(s), &rf); err != nil {
			rep.BadRefunds.add(s)
			continue
		}
		i, ok := inRun[rf.InvocationID]
		if !ok {
			// The run's Redis is its own, so a record under an id outside
			// the run (one the tool lost from its context, "") is itself a
			// defect (a violation), and two of them must not hide a
			// repeated effect: they are compared per (invocation, order).
			rep.ForeignRefunds++
			foreignPairs[rf.InvocationID+" "+rf.OrderID]++
			continue
		}
		rep.Refunds++
		runPairs[rf.InvocationID+" "+rf.OrderID] = true
		orders[rf.InvocationID] = append(orders[rf.InvocationID], rf.OrderID)
		if want := requestOrder(i); rf.OrderID != want {
			rep.WrongOrderRefunds.add(fmt.Sprintf("%s (asked for %s, refunded %s)", rf.InvocationID, want, orDash(rf.OrderID)))
		}
	}
	rep.RefundPairs = len(runPairs)
	repeats, err := h.rdb.Get(ctx, support.RepeatsKey).Int()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("chaos: read %s: %w", support.RepeatsKey, err)
	}
	rep.RefundRepeats = repeats
	for _, id := range slices.Sorted(maps.Keys(orders)) {
		if ords := orders[id]; len(ords) > 1 {
			rep.Duplicates.add(fmt.Sprintf("%s ×%d (%s)", id, len(ords), strings.Join(ords, ", ")))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(foreignPairs)) {
		if n := foreignPairs[k]; n > 1 {
			rep.Duplicates.add(fmt.Sprintf("%s ×%d", k, n))
		}
	}
	return nil
}

// clip returns s cut to at most n runes, marked with "…" when cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
