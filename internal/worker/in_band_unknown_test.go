package worker_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/envelope"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Row: UNKNOWN → DLQ for review (README "What happens to a request",
// DESIGN "Outcome → action", policy table: DeadLetter). The seed names
// "treating empty content as success" as a failure mode: a response with no
// parts and no finish reason is UNKNOWN, and it is dead-lettered for
// review; the empty answer is left out of the session, so a replay asks the
// model again. (The worker completed the invocation with an empty answer:
// no DLQ entry, no agentfleet_dead_letters_total{class="UNKNOWN"}, nothing
// for `dlq-replayer list --class UNKNOWN`, the runbook's "Unknown review".)
func TestInBandUnknownIsDeadLetteredForReview(t *testing.T) {
	e := newEnv(t)
	tm := taxonomy.NewMetrics(nil)
	ag := e.supportAgent(agenttest.NewScriptedModel(agenttest.Reply(&model.Response{})))
	ag.Callbacks.AfterModel = []agent.AfterModelCallback{taxonomy.AfterModel(taxonomy.CallbackOptions{Model: "m", Metrics: tm})}
	ag.Callbacks.OnModelError = []agent.OnModelErrorCallback{taxonomy.OnModelError(taxonomy.CallbackOptions{Model: "m", Metrics: tm})}
	w := e.startWorker("w1", ag, worker.Config{})
	e.publish(request("inv-empty", "s1", "hi"), nil)
	res := e.await("inv-empty")

	inBand := testutil.ToFloat64(tm.Failures.WithLabelValues("m", string(taxonomy.Unknown), string(taxonomy.ChannelInBand)))
	eventually(t, "the dead letter counted", func() bool {
		return testutilValue(w.metrics.DeadLetters.WithLabelValues(string(taxonomy.Unknown), "support")) == 1
	})
	dl := testutilValue(w.metrics.DeadLetters.WithLabelValues(string(taxonomy.Unknown), "support"))
	t.Logf("model_failures_total{class=UNKNOWN,channel=in_band} = %v; dead_letters_total{class=UNKNOWN} = %v; DLQ entries = %d; result status=%q class=%q content=%q",
		inBand, dl, len(e.dlqEntries()), res.Status, res.ErrorClass, res.Content)
	if inBand != 1 {
		t.Fatalf("precondition: the empty response was not classified UNKNOWN in band (%v)", inBand)
	}
	if res.Status != envelope.StatusDeadLettered || res.ErrorClass != string(taxonomy.Unknown) {
		t.Errorf("result = status %q class %q content %q, want dead_lettered UNKNOWN (DLQ for review)", res.Status, res.ErrorClass, res.Content)
	}
	if n := len(e.dlqEntries()); n != 1 {
		t.Errorf("%d DLQ entries, want 1 UNKNOWN entry for review", n)
	}
	if dl != 1 {
		t.Errorf("agentfleet_dead_letters_total{class=UNKNOWN} = %v, want 1", dl)
	}
	// The user message is stored, the empty answer is not: a replay
	// resumes and asks the model again instead of finding it final.
	sess, err := e.sessions.Get(context.Background(), session.Key{App: "support", UserID: "u1", SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if evs := sess.InvocationEvents("inv-empty"); len(evs) != 1 || evs[0].Author != session.AuthorUser {
		t.Errorf("the session holds %d event(s) of the invocation, want only the user message", len(evs))
	}
}
