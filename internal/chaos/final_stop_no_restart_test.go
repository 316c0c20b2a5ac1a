package chaos

import (
	"testing"
)

// Regression (found in review, eighteenth session): Run ends with stopFleet and then noteCrashes, "a worker that exited by
// itself since the last check". stopFleet notes a worker that had crashed,
// and noteCrashes → checkWorkers → replaceCrashed then restarts it: a new
// worker process starts after the fleet was stopped for good, and runs
// through the check phase (consuming what the run left in the requests
// stream, with faults on when --replay is off) until Close kills it.
// Reporting the crash must not bring the worker back.
func TestCrashFoundAtTheFinalStopDoesNotRestartTheWorker(t *testing.T) {
	h := startCrashOnceFleet(t, Config{})
	rep := &Report{}
	// What Run does after the last phase.
	h.stopFleet()
	h.noteCrashes(rep)
	if rep.OK() {
		t.Error("the crash found at the final stop is not reported")
	}
	h.workersMu.Lock()
	defer h.workersMu.Unlock()
	for i, p := range h.workers {
		if p != nil && !p.Exited() {
			t.Errorf("worker %d (pid %d, generation %d) is running after the final stopFleet: started again by noteCrashes",
				i+1, p.PID(), h.workerGen[i])
		}
	}
}
