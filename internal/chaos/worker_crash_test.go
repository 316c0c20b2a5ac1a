package chaos

import (
	"context"
	"io"
	"os"
	"path/filepath"
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
	if _, _, err := ServerBinaries(Config{}); err != nil {
		t.Skipf("server binaries missing: %v", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "crashing-worker")
	script := "#!/bin/sh\necho 'panic: runtime error: invalid memory address or nil pointer dereference' >&2\nexit 2\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{WorkDir: dir, Out: io.Discard, Workers: 1, WorkerBin: bin, ReplayerBin: bin})
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
		t.Fatal("the crashing worker did not exit")
	}
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
