package agent_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Regression (found in review, eighteenth session): a panicking tool and a
// panicking model are logged with their stack ("tool
// panicked", "model panicked"), so the on-call engineer who finds the
// dead letter can find the bug. A panicking callback (a plugin's nil map, an
// index out of range) is turned into a *CallbackError whose text is the
// panic value alone, and nothing is logged: the dead letter reads "agent:
// after-model callback: panic: runtime error: index out of range [3] with
// length 0" and no log line says where it happened.
func TestCallbackPanicIsLoggedWithItsStack(t *testing.T) {
	f := newFixture(t, agenttest.Reply(agenttest.Text("x")))
	var logs lockedBuffer
	f.runner.Logger = zerolog.New(&logs)
	f.agent.Callbacks.AfterModel = []agent.AfterModelCallback{func(context.Context, *agent.CallbackContext, *model.Response) (*model.Response, error) {
		var xs []int
		i := 3
		_ = xs[i] // a plugin's bug
		return nil, nil
	}}
	_, err := f.run(t, "inv-1", "x")
	var ce *agent.CallbackError
	if !errors.As(err, &ce) {
		t.Fatalf("error = %v, want *CallbackError", err)
	}
	_, file, _, _ := runtime.Caller(0)
	file = filepath.Base(file)
	out := logs.String()
	if !strings.Contains(out, file) {
		t.Fatalf("the callback's panic left no stack in the log (the error says only %q); log:\n%s", err, out)
	}
	if strings.Contains(err.Error(), file) || strings.Contains(err.Error(), "goroutine ") {
		t.Errorf("the error's text carries the stack (it reaches the dead letter and error maps): %q", err)
	}
}
