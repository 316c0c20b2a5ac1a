package retry_test

import (
	"context"
	"errors"
	"iter"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/retry"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// hangModel answers attempt n (from 1) as steps[n-1] says: "hang" blocks
// until the attempt's context ends and returns its error (a provider that
// accepted the request and never answers), "partial-hang" forwards one
// partial response first, anything else replies with that text. It
// records whether each attempt's context had a deadline.
type hangModel struct {
	steps []string

	mu        sync.Mutex
	calls     int
	deadlines []bool
}

func (h *hangModel) Name() string { return "hanging" }

func (h *hangModel) GenerateContent(ctx context.Context, _ *model.Request, _ bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		h.mu.Lock()
		step := h.steps[h.calls]
		h.calls++
		_, ok := ctx.Deadline()
		h.deadlines = append(h.deadlines, ok)
		h.mu.Unlock()
		switch step {
		case "partial-hang":
			if !yield(agenttest.Partial("Your refund "), nil) {
				return
			}
			fallthrough
		case "hang":
			<-ctx.Done()
			yield(nil, ctx.Err())
		default:
			yield(&model.Response{Content: model.NewTextContent(model.RoleModel, step)}, nil)
		}
	}
}

// An attempt that never answers is cancelled after AttemptTimeout, fails
// as TIMEOUT and is retried like any timeout.
func TestAttemptTimeoutRetriesAHungAttempt(t *testing.T) {
	inner := &hangModel{steps: []string{"hang", "ok"}}
	m, fx := newModel(t, inner, retry.Config{AttemptTimeout: 20 * time.Millisecond})
	out, err := collect(m.GenerateContent(context.Background(), req, false))
	if err != nil || len(out) != 1 || out[0].Content.Text() != "ok" {
		t.Fatalf("got %v, %v; want the second attempt's answer", out, err)
	}
	if inner.calls != 2 || fx.attempts("hanging") != 2 || len(fx.clock.Waits()) != 1 {
		t.Fatalf("calls %d, attempts %v, waits %v; want 2 attempts with one backoff", inner.calls, fx.attempts("hanging"), fx.clock.Waits())
	}
}

// When every attempt hangs the call gives up with the attempts' timeouts:
// TIMEOUT, an *AttemptTimeoutError that still matches DeadlineExceeded.
func TestAttemptTimeoutGivesUpAsTimeout(t *testing.T) {
	inner := &hangModel{steps: []string{"hang", "hang"}}
	m, _ := newModel(t, inner, retry.Config{MaxAttempts: 2, AttemptTimeout: 20 * time.Millisecond})
	_, err := collect(m.GenerateContent(context.Background(), req, false))
	var gu *retry.GaveUpError
	if !errors.As(err, &gu) || gu.Reason != retry.ReasonMaxAttempts || gu.Attempts != 2 {
		t.Fatalf("err = %v, want GaveUpError(max_attempts, 2)", err)
	}
	var te *retry.AttemptTimeoutError
	if !errors.As(err, &te) || te.After != 20*time.Millisecond || te.Model != "hanging" {
		t.Fatalf("err = %v, want it to wrap an *AttemptTimeoutError of 20ms", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want it to match context.DeadlineExceeded", err)
	}
	if c := taxonomy.ClassifyError(err); c != taxonomy.Timeout {
		t.Errorf("class = %s, want TIMEOUT", c)
	}
}

// A stream that forwarded output and then hangs ends at the attempt's
// timeout and is not retried.
func TestAttemptTimeoutAfterOutputIsNotRetried(t *testing.T) {
	inner := &hangModel{steps: []string{"partial-hang", "never"}}
	m, _ := newModel(t, inner, retry.Config{AttemptTimeout: 20 * time.Millisecond})
	out, err := collect(m.GenerateContent(context.Background(), req, true))
	var gu *retry.GaveUpError
	if len(out) != 1 || !errors.As(err, &gu) || gu.Reason != retry.ReasonOutputEmitted {
		t.Fatalf("got %d responses, %v; want the partial, then GaveUpError(output_emitted)", len(out), err)
	}
	if taxonomy.ClassifyError(err) != taxonomy.Timeout || inner.calls != 1 {
		t.Fatalf("class %s after %d calls, want TIMEOUT after 1", taxonomy.ClassifyError(err), inner.calls)
	}
}

// The caller's own cancellation is not an attempt timeout: it stays a
// cancellation (not a failure, not retried).
func TestCallerCancelIsNotAnAttemptTimeout(t *testing.T) {
	inner := &hangModel{steps: []string{"hang", "never"}}
	m, _ := newModel(t, inner, retry.Config{}) // default: 2m, longer than this test
	ctx, cancel := context.WithCancel(context.Background())
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err = collect(m.GenerateContent(ctx, req, false))
	}()
	for {
		inner.mu.Lock()
		n := inner.calls
		inner.mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond) // the attempt starts at once; polled, not timed
	}
	cancel()
	<-done
	var te *retry.AttemptTimeoutError
	if errors.As(err, &te) || taxonomy.ClassifyError(err) != taxonomy.Canceled || inner.calls != 1 {
		t.Fatalf("err = %v (class %s) after %d calls, want a cancellation after 1", err, taxonomy.ClassifyError(err), inner.calls)
	}
}

// The default bounds every attempt; a negative AttemptTimeout leaves the
// attempt only the caller's deadline.
func TestAttemptTimeoutDefaultAndNone(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		want    bool
	}{{"default", 0, true}, {"none", -1, false}} {
		t.Run(tc.name, func(t *testing.T) {
			inner := &hangModel{steps: []string{"ok"}}
			m, _ := newModel(t, inner, retry.Config{AttemptTimeout: tc.timeout})
			if _, err := collect(m.GenerateContent(context.Background(), req, false)); err != nil {
				t.Fatal(err)
			}
			if inner.deadlines[0] != tc.want {
				t.Fatalf("attempt had a deadline: %v, want %v", inner.deadlines[0], tc.want)
			}
		})
	}
}
