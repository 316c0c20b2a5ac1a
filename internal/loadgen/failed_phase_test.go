package loadgen

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/testmain"
)

// Regression (found in review, eighteenth session): Every framework
// invocation ends dead_lettered (the simulated provider answers
// QUOTA_EXHAUSTED to every model call, so nothing is refunded): the phase
// completes none of its invocations. load.run counts them under
// "other" and returns no error, the refund check compares 0 refunds with 0
// completions, and Run returns nil: cmd/loadgen exits 0 ("done") for a
// benchmark whose framework phase did none of the work it measures. (With
// failures after the refund the refund check happens to catch it; with
// failures before it nothing does.)
func TestPhaseWhoseInvocationsAllFailIsAnError(t *testing.T) {
	bin, ctx := workerProcessTest(t)
	var table strings.Builder
	rep, err := Run(ctx, Config{Embedded: true, N: 10, Workers: 1, Concurrency: 4, Timeout: time.Minute, SkipBaselines: true,
		Processes: true, WorkerBin: bin,
		WorkerEnv: []string{testmain.Env(testmain.Worker), "AGENTFLEET_MODEL_SIM_FAULTS=quota=1"}}, &table, io.Discard)
	t.Logf("Run: %v\n%s", err, table.String())
	fw := rep.phase("framework")
	if fw == nil {
		t.Fatalf("no framework phase")
	}
	t.Logf("framework: submitted %d completed %d lost %d other %v refunds %d", fw.Submitted, fw.Completed, fw.Lost, fw.Other, fw.Refunds)
	if fw.Completed == 0 && err == nil {
		t.Errorf("a framework phase that completed 0 of %d invocations (other: %v) makes Run return nil: loadgen exits 0", fw.Submitted, fw.Other)
	}
}

// Regression (found in review, eighteenth session): the refund cross-check
// only compared counts, so a completed invocation without a refund and a
// refund by an invocation that did not complete cancelled out. It now
// compares the sets.
func TestRefundRecordsAreComparedWithTheCompletedInvocationsAsSets(t *testing.T) {
	cfg := Config{N: 3, Window: 10}
	p := &Phase{Name: "framework", Submitted: 3, Completed: 2, Other: map[string]int{"dead_lettered": 1}, Refunds: 2,
		completedIDs: map[string]bool{"lg-a": true, "lg-b": true},
		refundsByID:  map[string]int{"lg-a": 1, "lg-c": 1}}
	errs := checkPhase(p, cfg)
	t.Logf("%v", errs)
	var all []string
	for _, err := range errs {
		all = append(all, err.Error())
	}
	text := strings.Join(all, "\n")
	for _, want := range []string{"2 of 3 invocations completed", "dead_lettered:1", "1 completed without a refund (e.g. lg-b)", "1 refunded without completing (e.g. lg-c)"} {
		if !strings.Contains(text, want) {
			t.Errorf("the errors do not say %q:\n%s", want, text)
		}
	}

	ok := &Phase{Name: "framework", Submitted: 2, Completed: 2, Refunds: 2,
		completedIDs: map[string]bool{"lg-a": true, "lg-b": true},
		refundsByID:  map[string]int{"lg-a": 1, "lg-b": 1}}
	if errs := checkPhase(ok, Config{N: 2, Window: 10}); len(errs) != 0 {
		t.Errorf("a phase that completed everything with one refund each: %v", errs)
	}
}
