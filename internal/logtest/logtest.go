// Package logtest holds a log sink for tests that wait for a log line
// instead of sleeping.
package logtest

import (
	"bytes"
	"sync"
	"testing"
	"time"
)

// WaitTimeout bounds Watch.Wait.
const WaitTimeout = 30 * time.Second

// Watch is an io.Writer for a logger (zerolog.New(w)) that keeps
// everything written and signals the first line holding each text it was
// told to watch. It is safe for concurrent use.
type Watch struct {
	mu   sync.Mutex
	b    bytes.Buffer
	want map[string]chan struct{}
}

// New returns a Watch watching for each of texts.
func New(texts ...string) *Watch {
	w := &Watch{want: map[string]chan struct{}{}}
	for _, s := range texts {
		w.want[s] = make(chan struct{})
	}
	return w
}

// Write implements io.Writer.
func (w *Watch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for s, ch := range w.want {
		if ch != nil && bytes.Contains(p, []byte(s)) {
			close(ch)
			w.want[s] = nil
		}
	}
	return w.b.Write(p)
}

// String returns everything written so far.
func (w *Watch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// Count returns how many times s occurs in what was written.
func (w *Watch) Count(s string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Count(w.b.Bytes(), []byte(s))
}

// Wait blocks until a line holding text (one New was given) was written,
// and fails t after WaitTimeout, showing the log. A text New was not given
// returns at once.
func (w *Watch) Wait(t testing.TB, text string) {
	t.Helper()
	w.mu.Lock()
	ch, watched := w.want[text]
	w.mu.Unlock()
	if !watched || ch == nil {
		return
	}
	select {
	case <-ch:
	case <-time.After(WaitTimeout):
		t.Fatalf("no log line %q:\n%s", text, w.String())
	}
}
