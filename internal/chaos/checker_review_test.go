package chaos

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/dlq"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// deadLetterEntry publishes a DLQ entry for id as a worker would.
func deadLetterEntry(t *testing.T, p *proofCheck, id, class string, retryable bool) {
	t.Helper()
	ctx := context.Background()
	pub := dlq.NewPublisher(p.h.js, dlq.Config{})
	now := time.Now().UTC()
	e := &dlq.Entry{InvocationID: id, Agent: supportAgent, Class: class, Reason: "review",
		Retryable: retryable, DeliveryCount: 1, FirstFailedAt: now, FailedAt: now, Worker: "w1", Model: "sim"}
	req, _ := json.Marshal(newRequest(id, 1))
	e.SetRequest(req)
	if _, err := pub.Publish(ctx, e); err != nil {
		t.Fatal(err)
	}
}

// checkWithSnapshot runs the checker over ids with the given report (so a test
// can set the replay phase's DLQ snapshot, as Harness.replay does).
func checkWithSnapshot(t *testing.T, p *proofCheck, ids []string, rep *Report) *Report {
	t.Helper()
	tr := newTracker(ids)
	for _, id := range ids {
		tr.markSubmitted(id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.h.check(ctx, p.cl, tr, rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// Regression (found in review, seventeenth session): An entry the replayer does not replay (UNKNOWN is never replayed
// automatically) is still in the DLQ after the replay, so it is both in the
// replay phase's snapshot (rep.beforeReplay) and in the final read. The
// checker walks the concatenation of the two, so the one mislabelled entry
// is reported as two retryable-flag violations (same seq twice).
func TestRetryableMismatchCountedOncePerEntry(t *testing.T) {
	p := newProofCheck(t)
	ctx := context.Background()
	id := "chaos-review-0"
	deadLetterEntry(t, p, id, "UNKNOWN", true) // the flag disagrees with the class
	p.finish(t, id, envelope.StatusDeadLettered, "UNKNOWN")

	_, snapshot, _, err := p.h.latestEntries(ctx) // what replay() stores before running the replayer
	if err != nil {
		t.Fatal(err)
	}
	rep := checkWithSnapshot(t, p, []string{id}, &Report{ReplayMode: "dlq-replayer replay", beforeReplay: snapshot})
	t.Logf("retryable mismatches: %v", rep.RetryableMismatch)
	if rep.RetryableMismatch.N != 1 {
		t.Errorf("one DLQ entry whose retryable flag disagrees with its class is reported %d times: %v",
			rep.RetryableMismatch.N, rep.RetryableMismatch)
	}
}

// Regression (found in review, seventeenth session): The run's NATS server is its own (its own store directory), so a result on
// AGENT_RESULTS for an invocation id the run never submitted was made up by
// a worker (an id lost or mangled on the way): an ending of a request that
// does not exist. The checker only looks up the run's ids and never sees it.
func TestResultForAnUnknownInvocationIsAViolation(t *testing.T) {
	p := newProofCheck(t)
	id := "chaos-review-1"
	p.finish(t, id, envelope.StatusCompleted, "")
	p.finish(t, "chaos-review-stranger", envelope.StatusCompleted, "") // never submitted

	rep := p.check(t, []string{id}, true)
	t.Logf("final %v, violations %v", rep.Final, rep.Violations())
	if rep.OK() {
		t.Errorf("a result for an invocation the run never submitted leaves the report OK (violations %q)",
			strings.Join(rep.Violations(), "; "))
	}
}

// Regression (found in review, seventeenth session): Likewise a DLQ entry under an id the run never submitted: the checker
// counts it in DLQForeign, which is neither a violation nor printed in the
// table, while the same situation for refund records (ForeignRefunds) is a
// violation because the run's stores are its own.
func TestDLQEntryForAnUnknownInvocationIsAViolation(t *testing.T) {
	p := newProofCheck(t)
	id := "chaos-review-2"
	p.finish(t, id, envelope.StatusCompleted, "")
	deadLetterEntry(t, p, "chaos-review-stranger", "SERVER", true) // never submitted

	rep := p.check(t, []string{id}, true)
	t.Logf("DLQ foreign %d, violations %v", rep.DLQForeign, rep.Violations())
	if rep.OK() {
		t.Errorf("a DLQ entry for an invocation the run never submitted leaves the report OK (DLQForeign %d)", rep.DLQForeign)
	}
}

// Regression (found in review, seventeenth session): The producer was told "dead_lettered SERVER" (a transient class: the user
// got "queued", the work will be replayed), but the invocation's DLQ entry
// carries a class the taxonomy never replays (UNKNOWN, flag consistent with
// it). The replayer leaves it, the invocation never completes, and the
// checker decides "transient" from the entry alone, so "every transient dead
// letter completed after the replay" holds vacuously: the run passes.
func TestTransientResultClassIsCheckedAgainstTheReplay(t *testing.T) {
	p := newProofCheck(t)
	id := "chaos-review-3"
	deadLetterEntry(t, p, id, "UNKNOWN", false)
	p.finish(t, id, envelope.StatusDeadLettered, "SERVER")

	rep := p.check(t, []string{id}, true)
	t.Logf("final %v, transient %d/%d, violations %v", rep.Final, rep.TransientCompleted, rep.Transient, rep.Violations())
	if rep.OK() {
		t.Errorf("an invocation whose last result is dead_lettered SERVER, never completed after the replay, passes (final %v)", rep.Final)
	}
}
