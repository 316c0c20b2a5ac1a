package shutdown

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// syncBuffer is a bytes.Buffer safe for the watcher and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The first signal cancels, the second exits with ForcedExitCode.
func TestSecondSignalExits(t *testing.T) {
	ch := make(chan os.Signal)
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exited := make(chan int, 1)
	var out syncBuffer
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		watch(ch, done, cancel, &out, WorkerForcedNote, func(code int) { exited <- code })
	}()

	ch <- syscall.SIGINT
	<-ctx.Done()
	select {
	case code := <-exited:
		t.Fatalf("exited (%d) after the first signal", code)
	default:
	}
	ch <- syscall.SIGTERM
	if code := <-exited; code != ForcedExitCode {
		t.Fatalf("exit code %d, want %d", code, ForcedExitCode)
	}
	<-finished
	if s := out.String(); !strings.Contains(s, "send it again to exit at once") || !strings.Contains(s, "exiting at once") {
		t.Fatalf("stderr = %q", s)
	}
}

// After stop nothing is watched: no exit, the goroutine ends.
func TestStopEndsTheWatch(t *testing.T) {
	ctx, stop := Notify(&syncBuffer{})
	stop()
	<-ctx.Done()
}
