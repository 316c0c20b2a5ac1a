package app_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/app"
)

// signalWriter closes seen the first time its output holds marker.
type signalWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	marker string
	seen   chan struct{}
	once   sync.Once
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.marker) {
		w.once.Do(func() { close(w.seen) })
	}
	return n, err
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// Regression (found in review, twentieth session): Ctrl-C during `worker --demo N` (WorkerMain's
// context ends) is reported as lost work: every request still running is
// counted in DemoReport.Lost, a line "no result: ... context canceled" is
// printed per request (all N of them: the submit loop goes on after the
// stop), and the run fails, exit 1, with "demo: read refunds: context
// canceled" (the refunds are read with the cancelled context), or, when that
// read wins, "demo: N requests got no result", the words cmd/worker
// reserves for "the demo found a lost request". Nothing was lost (the
// requests are in the stream, the worker Nak'ed what it held); the
// invariant the demo is there to show is reported broken because the user
// pressed Ctrl-C.
func TestInterruptedDemoIsNotReportedAsLost(t *testing.T) {
	cfg := fastConfig(t)
	cfg.Embedded.DataDir = t.TempDir()
	cfg.Model.Sim.Latency = 30 * time.Second // the requests are in flight when the user presses Ctrl-C
	cfg.Worker.DrainTimeout = 100 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &signalWriter{marker: "agentfleet demo:", seen: make(chan struct{})}
	type res struct {
		rep *app.DemoReport
		err error
	}
	done := make(chan res, 1)
	go func() {
		rep, err := app.RunDemo(ctx, cfg, 40, os.Getenv, out, io.Discard)
		done <- res{rep, err}
	}()
	select {
	case <-out.seen:
	case r := <-done:
		t.Fatalf("the demo ended before it was interrupted: %v\n%s", r.err, out.String())
	case <-time.After(60 * time.Second):
		t.Fatal("the demo did not start")
	}
	cancel() // Ctrl-C
	var r res
	select {
	case r = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the interrupted demo did not end")
	}
	if r.rep != nil && r.rep.Lost > 0 {
		t.Errorf("an interrupted demo reports %d of %d requests lost (err %v); output:\n%s", r.rep.Lost, r.rep.Requests, r.err, lastN(out.String(), 8))
	}
	if r.err != nil && strings.Contains(r.err.Error(), "got no result") {
		t.Errorf("an interrupted demo fails as lost work: %v", r.err)
	}
	// It ends as interrupted (WorkerMain: exit 130), says how far it got,
	// and still read the refunds (no "read refunds: context canceled").
	if !errors.Is(r.err, app.ErrDemoInterrupted) {
		t.Errorf("err = %v; want ErrDemoInterrupted", r.err)
	}
	if r.rep == nil || !r.rep.Interrupted || r.rep.Unfinished == 0 {
		t.Errorf("report = %+v; want Interrupted with the unfinished requests counted", r.rep)
	}
	if !strings.Contains(out.String(), "interrupted: ") || strings.Contains(out.String(), "no result:") {
		t.Errorf("the output does not say the run was interrupted, or prints requests without a result:\n%s", lastN(out.String(), 8))
	}
}

func lastN(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
