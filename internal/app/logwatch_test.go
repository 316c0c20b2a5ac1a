package app_test

import (
	"bytes"
	"sync"
	"testing"
	"time"
)

// logWatch is a log sink that signals the first line containing each
// wanted text, so a test waits for a log line instead of sleeping.
type logWatch struct {
	mu   sync.Mutex
	b    bytes.Buffer
	want map[string]chan struct{}
}

func newLogWatch(wants ...string) *logWatch {
	l := &logWatch{want: map[string]chan struct{}{}}
	for _, w := range wants {
		l.want[w] = make(chan struct{})
	}
	return l
}

func (l *logWatch) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for w, ch := range l.want {
		if ch != nil && bytes.Contains(p, []byte(w)) {
			close(ch)
			l.want[w] = nil
		}
	}
	return l.b.Write(p)
}

func (l *logWatch) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

func (l *logWatch) wait(t *testing.T, w string) {
	t.Helper()
	l.mu.Lock()
	ch := l.want[w]
	l.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("no log line %q:\n%s", w, l.String())
	}
}
