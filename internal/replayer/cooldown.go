package replayer

import (
	"context"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet/internal/cooldown"
)

// gate pauses replays of a model while its fleet-wide cooldown is open. It
// caches each model's answer for poll, so a fast replay asks the store at
// most once per poll per model.
type gate struct {
	store cooldown.Store
	poll  time.Duration
	now   func() time.Time
	// onPause is told when a model's replays pause (until) and resume
	// (zero time).
	onPause func(model string, until time.Time)

	mu    sync.Mutex
	cache map[string]gateEntry
}

type gateEntry struct {
	until   time.Time // cooldown end, zero when closed
	checked time.Time
}

func newGate(store cooldown.Store, poll time.Duration, now func() time.Time, onPause func(string, time.Time)) *gate {
	if onPause == nil {
		onPause = func(string, time.Time) {}
	}
	return &gate{store: store, poll: poll, now: now, onPause: onPause, cache: map[string]gateEntry{}}
}

// openUntil returns the end of model's open cooldown, or the zero time.
// Store errors are treated as closed (the workers' own breaker still
// protects the provider) and returned.
func (g *gate) openUntil(ctx context.Context, model string) (time.Time, error) {
	if g == nil || g.store == nil || model == "" {
		return time.Time{}, nil
	}
	now := g.now()
	g.mu.Lock()
	c, ok := g.cache[model]
	g.mu.Unlock()
	if ok && now.Sub(c.checked) < g.poll {
		if c.until.After(now) {
			return c.until, nil
		}
		return time.Time{}, nil
	}
	until, err := g.store.Status(ctx, model)
	if err != nil {
		return time.Time{}, err
	}
	g.mu.Lock()
	g.cache[model] = gateEntry{until: until, checked: now}
	g.mu.Unlock()
	if until.After(now) {
		return until, nil
	}
	return time.Time{}, nil
}

// wait blocks while model's cooldown is open, checking again every poll.
// It returns ctx's error if ctx ends first.
func (g *gate) wait(ctx context.Context, model string) error {
	paused := false
	for {
		until, _ := g.openUntil(ctx, model)
		if until.IsZero() {
			if paused {
				g.onPause(model, time.Time{})
			}
			return nil
		}
		if !paused {
			paused = true
			g.onPause(model, until)
		}
		d := min(g.poll, max(until.Sub(g.now()), time.Millisecond))
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
