package chaos

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// startExitingWorker starts one worker process running script and waits for
// it to exit by itself.
func startExitingWorker(t *testing.T, script string) *Harness {
	t.Helper()
	return startScriptedFleet(t, Config{}, script)
}

// startScriptedFleet starts a one-worker fleet of cfg whose worker (and
// replayer) is script, and waits until the worker has exited by itself.
func startScriptedFleet(t *testing.T, cfg Config, script string) *Harness {
	t.Helper()
	if _, _, err := ServerBinaries(Config{}); err != nil {
		t.Skipf("server binaries missing: %v", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "worker")
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg.WorkDir, cfg.Out, cfg.Workers, cfg.WorkerBin, cfg.ReplayerBin = dir, io.Discard, 1, bin, bin
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	if err := h.Build(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := h.startFleet(true); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.workers[0].Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the worker did not exit")
	}
	return h
}

// Regression (found in review, seventeenth session): A worker that stops by itself with exit status 0 in the middle of the
// soak (its run loop returned: e.g. it gave up after the NATS restart) was
// neither asked to stop nor signalled. checkWorkers only looks at exits
// that are not Success(), so it is not reported, not restarted, and the
// fleet silently shrinks while the run can still pass.
func TestWorkerThatExitsZeroByItselfIsAViolation(t *testing.T) {
	h := startExitingWorker(t, "#!/bin/sh\necho 'worker stopped: consumer closed' >&2\nexit 0\n")
	rep := &Report{}
	h.noteCrashes(rep)
	t.Logf("events %v, violations %v", rep.Events, rep.Violations())
	if rep.OK() {
		t.Error("a worker that exited by itself with status 0 leaves the report OK, and it was not restarted")
	}
}

// Regression (found in review, seventeenth session): A worker killed by a signal the harness never sent (the kernel's OOM
// killer's SIGKILL, a SIGABRT from a fatal runtime error with
// GOTRACEBACK=crash) is taken for one of the harness's own kills
// ("Signaled: ours"): not reported and not restarted.
func TestWorkerKilledByASignalTheHarnessDidNotSendIsAViolation(t *testing.T) {
	h := startExitingWorker(t, "#!/bin/sh\nkill -KILL $$\n")
	rep := &Report{}
	h.noteCrashes(rep)
	t.Logf("events %v, violations %v", rep.Events, rep.Violations())
	if rep.OK() {
		t.Error("a worker killed by a signal the harness did not send leaves the report OK, and it was not restarted")
	}
}
