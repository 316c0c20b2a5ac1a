package cooldown

import (
	"context"
	"errors"
	"iter"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// scriptedStore answers Status with what the test sets and Record with the
// zero time, as Redis does for a success it only counts locally (no flush
// within CheckInterval: it returns the end its last flush saw).
type scriptedStore struct {
	mu     sync.Mutex
	status time.Time
}

func (s *scriptedStore) Record(context.Context, string, bool) (time.Time, error) {
	return time.Time{}, nil
}

func (s *scriptedStore) Status(context.Context, string) (time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status, nil
}

// gatedModel answers every call with a text; a call made while gate is set
// waits for it to close first.
type gatedModel struct {
	mu      sync.Mutex
	gate    chan struct{}
	started chan struct{}
	calls   int
}

func (g *gatedModel) Name() string { return "gated" }

func (g *gatedModel) GenerateContent(ctx context.Context, _ *model.Request, _ bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		g.mu.Lock()
		g.calls++
		gate := g.gate
		g.mu.Unlock()
		if gate != nil {
			close(g.started)
			<-gate
		}
		yield(&model.Response{Content: model.NewTextContent(model.RoleModel, "ok")}, nil)
	}
}

// Regression (found in review, twenty-fifth session): a call in flight when
// the cooldown opened finishes with a success after the decorator learnt
// the cooldown is open; Record then answers from the store's local count
// (the end its last flush saw, none) and the decorator took that for the
// news that the cooldown is closed: calls went to the provider during the
// cooldown until the next check. A Record answer never shortens a known
// cooldown; the next Status check is what can.
func TestSuccessInFlightDoesNotForgetAnOpenCooldown(t *testing.T) {
	store := &scriptedStore{}
	inner := &gatedModel{gate: make(chan struct{}), started: make(chan struct{})}
	m := Wrap(inner, store, Config{CheckInterval: time.Second}, func(error) bool { return true })
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	var clock sync.Mutex
	now := t0
	m.now = func() time.Time { clock.Lock(); defer clock.Unlock(); return now }
	set := func(d time.Duration) { clock.Lock(); now = t0.Add(d); clock.Unlock() }

	call := func() error {
		var last error
		for _, err := range m.GenerateContent(context.Background(), &model.Request{}, false) {
			last = err
		}
		return last
	}
	done := make(chan error, 1)
	go func() { done <- call() }() // in flight when the cooldown opens
	<-inner.started
	inner.mu.Lock()
	gate := inner.gate
	inner.gate = nil
	inner.mu.Unlock()

	set(2 * time.Second) // past CheckInterval: the next call asks the store
	store.mu.Lock()
	store.status = t0.Add(32 * time.Second)
	store.mu.Unlock()
	var open *OpenError
	if err := call(); !errors.As(err, &open) {
		t.Fatalf("call after the cooldown opened: %v; want an *OpenError", err)
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatalf("the call in flight: %v", err)
	}
	set(2500 * time.Millisecond) // within CheckInterval of the last check
	if err := call(); !errors.As(err, &open) {
		t.Fatalf("call 0.5 s later, the cooldown open until %s: %v (provider calls %d); want an *OpenError", open, err, inner.calls)
	}
	if inner.calls != 1 {
		t.Fatalf("provider calls = %d; want 1 (only the one in flight before the cooldown)", inner.calls)
	}
}
