package chaos

import (
	"context"
	"testing"
	"time"
)

// A worker process that dies by itself during the soak (a panic, a fatal
// error: exit status 2 or 3, not one of the harness's signals) is the
// product failing under chaos. The harness notices it (progress →
// checkWorkers), restarts it and records an event; nothing reached
// Report.Violations, so the run and cmd/chaos's exit code stayed green. Now
// it is a violation (Report.WorkerCrashes).
func TestWorkerThatDiesByItselfIsAViolation(t *testing.T) {
	h := startExitingWorker(t, "#!/bin/sh\necho 'panic: runtime error: invalid memory address or nil pointer dereference' >&2\nexit 2\n")
	rep := &Report{}
	tr := newTracker(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5500*time.Millisecond)
	defer cancel()
	h.progress(ctx, tr, rep) // one tick
	t.Logf("events %v, violations %v", rep.Events, rep.Violations())
	if len(rep.Events) == 0 {
		t.Fatal("the harness did not notice the crash at all")
	}
	if rep.OK() {
		t.Errorf("a worker that crashed by itself (%q) leaves the report OK: cmd/chaos exits 0", rep.Events[0].What)
	}
}
