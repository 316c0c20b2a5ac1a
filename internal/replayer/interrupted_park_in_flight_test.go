package replayer

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// calledFrom reports whether a function whose name ends in suffix is on the
// caller's stack.
func review7dCalledFrom(suffix string) bool {
	pcs := make([]uintptr, 32)
	n := runtime.Callers(2, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, suffix) {
			return true
		}
		if !more {
			return false
		}
	}
}

// Regression (found in review, twenty-fourth session): ^C while park's copy
// of its last entry is being published: Park failed
// with ctx's error, exec.park counts it under errors and reports it done,
// so the interrupted message takes it as handled and says the run was
// "interrupted while waiting for results: all 1 entries were handled" –
// park awaits no result, and the entry is still in the DLQ (not parked).
func TestInterruptedParkInFlightEntryIsNotHandled(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	ids := x.seed("pk", 1, "UNKNOWN", 0)

	runCtx, interrupt := context.WithCancel(ctx)
	defer interrupt()
	var once sync.Once
	now := func() time.Time {
		// exec.park reads the clock right before Park publishes the
		// copy: ^C comes there (the publish is in flight at the
		// interrupt).
		if review7dCalledFrom("(*exec).park") {
			once.Do(interrupt)
		}
		return time.Now()
	}
	var o, e syncBuf
	code := Run(runCtx, []string{"park", "--class", "UNKNOWN", "--yes"},
		Env{Stdout: &o, Stderr: &e, Lookup: x.lookup(nil), Now: now})
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, o.String(), e.String())
	if code != ExitInterrupted {
		t.Fatalf("exit %d, want %d", code, ExitInterrupted)
	}
	left := x.dlqIDs()
	if len(left) != len(ids) {
		t.Fatalf("DLQ holds %v; the test wants the in-flight park cut (entry left)", left)
	}
	if strings.Contains(e.String(), "waiting for results") || strings.Contains(e.String(), "all 1 entries were handled") {
		t.Fatalf("the interrupted park says every entry was handled while waiting for results, yet its only entry %v stays in %s, not parked:\n%s",
			left, x.sc.DLQStream, e.String())
	}
	contains(t, e.String(), "the other 1 stay in "+x.sc.DLQStream)
}
