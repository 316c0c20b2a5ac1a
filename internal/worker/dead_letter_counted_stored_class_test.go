package worker_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// Regression (found in review of this session's fix, twenty-fourth session): a dead letter counted
// once recorded was counted under the record's class, not the class of the
// entry the DLQ holds: a run dead-lettered RATE_LIMITED whose record write
// failed, then a panic dead letter (UNKNOWN) that publishEntry dropped
// beside the kept, automatically replayed RATE_LIMITED entry. The DLQ held
// one RATE_LIMITED entry; the counters said one UNKNOWN dead letter and no
// RATE_LIMITED one (AgentfleetDLQGrowing sums by class; the runbook sends
// on-call to `dlq-replayer stats`, which showed another class). Each entry
// is counted under the class the DLQ stores.
func TestDeadLetterCountedUnderTheClassTheDLQHolds(t *testing.T) {
	e := newEnv(t)
	const id = "inv-counted-stored-class"
	var bug atomic.Bool
	invs := &failOnceInvocations{InvocationStore: e.invs, after: func() { bug.Store(true) }}
	e.deps = func(d *worker.Deps) {
		d.Invocations = invs
		d.Locker = switchablePanicLocker{Locker: d.Locker, on: &bug}
		d.Gate = nil
	}
	llm := agenttest.NewScriptedModel(agenttest.Fail(&model.ProviderError{Provider: "test", StatusCode: 429, Status: "RESOURCE_EXHAUSTED"}))
	w := e.startWorker("w1", e.supportAgent(llm), worker.Config{MaxDeliveries: 2, InfraBackoffMax: time.Millisecond})
	e.publish(request(id, "s1", "hi"), nil)
	if res := e.await(id); res.ErrorClass != "UNKNOWN" {
		t.Fatalf("result %+v, want the panic's UNKNOWN dead letter", res)
	}
	eventually(t, "the message terminated", func() bool { return e.pending() == 0 })
	entries := map[string]int{}
	for _, en := range e.dlqEntries() {
		entries[en.Class]++
	}
	rl := testutilValue(w.metrics.DeadLetters.WithLabelValues("RATE_LIMITED", "support"))
	unk := testutilValue(w.metrics.DeadLetters.WithLabelValues("UNKNOWN", "support"))
	t.Logf("DLQ entries by class %v; counted RATE_LIMITED %v, UNKNOWN %v", entries, rl, unk)
	if float64(entries["RATE_LIMITED"]) != rl || float64(entries["UNKNOWN"]) != unk {
		t.Errorf("DLQ holds %v, agentfleet_dead_letters_total says RATE_LIMITED=%v UNKNOWN=%v", entries, rl, unk)
	}
}

// The other way round: the panic's UNKNOWN entry, whose record write
// failed, and the redelivery's RATE_LIMITED dead letter published beside
// it. Counted once recorded, the UNKNOWN entry was never counted.
func TestPanicEntryBesideARunsDeadLetterIsCounted(t *testing.T) {
	e := newEnv(t)
	const id = "inv-counted-beside"
	var bug atomic.Bool
	bug.Store(true)
	invs := &failOnceInvocations{InvocationStore: e.invs, after: func() { bug.Store(false) }}
	e.deps = func(d *worker.Deps) {
		d.Invocations = invs
		d.Locker = switchablePanicLocker{Locker: d.Locker, on: &bug}
		d.Gate = nil
	}
	llm := agenttest.NewScriptedModel(agenttest.Fail(&model.ProviderError{Provider: "test", StatusCode: 429, Status: "RESOURCE_EXHAUSTED"}))
	w := e.startWorker("w1", e.supportAgent(llm), worker.Config{MaxDeliveries: 2, InfraBackoffMax: time.Millisecond})
	e.publish(request(id, "s1", "hi"), nil)
	if res := e.await(id); res.ErrorClass != "RATE_LIMITED" || !invs.failed.Load() {
		t.Fatalf("result %+v, want the redelivery's RATE_LIMITED dead letter after the panic's failed record write", res)
	}
	eventually(t, "the message acked", func() bool { return e.pending() == 0 })
	entries := map[string]int{}
	for _, en := range e.dlqEntries() {
		entries[en.Class]++
	}
	rl := testutilValue(w.metrics.DeadLetters.WithLabelValues("RATE_LIMITED", "support"))
	unk := testutilValue(w.metrics.DeadLetters.WithLabelValues("UNKNOWN", "support"))
	t.Logf("DLQ entries by class %v; counted RATE_LIMITED %v, UNKNOWN %v", entries, rl, unk)
	if entries["RATE_LIMITED"] != 1 || entries["UNKNOWN"] != 1 || rl != 1 || unk != 1 {
		t.Errorf("DLQ holds %v, agentfleet_dead_letters_total says RATE_LIMITED=%v UNKNOWN=%v, want one of each", entries, rl, unk)
	}
}
