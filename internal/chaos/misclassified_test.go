package chaos

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review, nineteenth session): The checker took the
// class of a failed invocation from the worker under test (its result, its
// DLQ entry, its record) and only asked transient classes to complete after
// the replay. The run injects only transient faults (the default spec:
// server, rate_limited, timeout; the tool faults are "unavailable", retried
// by the model, and end completed): an invocation that ends dead-lettered
// UNKNOWN (or failed BAD_REQUEST) after the replay is a transient fault the
// product misclassified, and it never completes. Result, entry and record
// agree with each other, so nothing is flagged and "every transient entry
// completed after the replay" held vacuously: a fleet whose classifier
// turned every simulated 503 into UNKNOWN PASSED the soak with 0 completed.
// Correct: with the replay on, an invocation that did not complete, whose
// class the run's fault spec cannot produce (here: not a transient class),
// is a violation; so it is with the replay off (the classes are the
// faults', not the replay's).
func TestMisclassifiedFailureDoesNotPassVacuously(t *testing.T) {
	p := newProofCheck(t)
	ids := []string{"chaos-review-mis-0", "chaos-review-mis-1"}
	// A simulated 503 classified UNKNOWN: dead-lettered for review, the
	// entry's flag consistent with its class, the record agreeing.
	deadLetterEntry(t, p, ids[0], "UNKNOWN", false)
	p.finish(t, ids[0], envelope.StatusDeadLettered, "UNKNOWN")
	// A simulated timeout classified BAD_REQUEST: "failed", escalated.
	deadLetterEntry(t, p, ids[1], "BAD_REQUEST", false)
	p.finish(t, ids[1], envelope.StatusFailed, "BAD_REQUEST")

	// The run's configuration: the default fault spec (transient faults
	// only) and the replay on.
	rep := &Report{Config: Config{}.WithDefaults(), ReplayMode: "dlq-replayer replay"}
	rep = checkWithSnapshot(t, p, ids, rep)
	t.Logf("model faults %q; final %v; transient %d/%d; violations %q",
		rep.Config.ModelFaults, rep.Final, rep.TransientCompleted, rep.Transient, strings.Join(rep.Violations(), "; "))
	if rep.OK() {
		t.Errorf("a run with only transient faults injected, whose invocations ended dead_lettered UNKNOWN and failed BAD_REQUEST "+
			"after the replay (0 of %d completed), PASSES: final %v", len(ids), rep.Final)
	}
	if rep.Misclassified.N != len(ids) {
		t.Errorf("misclassified %v, want both invocations", rep.Misclassified)
	}
}

// The classes the faults can produce pass: a transient dead letter not
// replayed (the replay off) is no misclassification, and neither is a
// QUOTA_EXHAUSTED one when the spec simulates quota faults; with the
// default spec the same QUOTA_EXHAUSTED is one.
func TestFailureClassesTheFaultsProduceAreNotMisclassified(t *testing.T) {
	p := newProofCheck(t)
	ids := []string{"chaos-classes-0", "chaos-classes-1"}
	deadLetterEntry(t, p, ids[0], "SERVER", true)
	p.finish(t, ids[0], envelope.StatusDeadLettered, "SERVER")
	deadLetterEntry(t, p, ids[1], "QUOTA_EXHAUSTED", true)
	p.finish(t, ids[1], envelope.StatusDeadLettered, "QUOTA_EXHAUSTED")

	rep := p.check(t, ids, false) // the harness's configuration: the default spec
	if rep.Misclassified.N != 1 || !strings.HasPrefix(rep.Misclassified.Examples[0], ids[1]+" ") {
		t.Errorf("default spec: misclassified %v, want %s (QUOTA_EXHAUSTED) only", rep.Misclassified, ids[1])
	}
	p.h.cfg.ModelFaults = "server=0.2,quota=0.05"
	rep = p.check(t, ids, false)
	if rep.Misclassified.N != 0 || !rep.OK() {
		t.Errorf("spec %q: misclassified %v, violations %q", p.h.cfg.ModelFaults, rep.Misclassified, strings.Join(rep.Violations(), "; "))
	}
}
