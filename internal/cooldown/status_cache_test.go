package cooldown_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/cooldown"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// countingSource counts the Status calls that reach the store.
type countingSource struct {
	src   cooldown.StatusSource
	calls atomic.Int32
}

func (s *countingSource) Status(ctx context.Context, model string) (time.Time, error) {
	s.calls.Add(1)
	return s.src.Status(ctx, model)
}

// openCooldown opens model's cooldown in s: cfg() opens at 10 failures out
// of 10 calls, for a minute.
func openCooldown(t *testing.T, s cooldown.Store, model string) {
	t.Helper()
	for range 10 {
		if _, err := s.Record(context.Background(), model, true); err != nil {
			t.Fatal(err)
		}
	}
	if until, err := s.Status(context.Background(), model); err != nil || !until.After(time.Now()) {
		t.Fatalf("cooldown of %s not open: %v %v", model, until, err)
	}
}

func TestStatusCacheAsksTheStoreOncePerIntervalPerModel(t *testing.T) {
	const interval = time.Second
	steps := []struct {
		name      string
		at        time.Duration // cache clock, from the start
		model     string
		openFirst bool // open the model's cooldown in the store before the call
		wantOpen  bool
		wantCalls int32 // store calls so far
	}{
		{name: "first call asks the store", at: 0, model: "m", wantCalls: 1},
		{name: "within the interval: cached", at: 500 * time.Millisecond, model: "m", wantCalls: 1},
		{name: "a cooldown opened meanwhile is seen at most an interval late", at: interval - time.Millisecond, model: "m", openFirst: true, wantCalls: 1},
		{name: "another model has an entry of its own", at: interval - time.Millisecond, model: "other", wantCalls: 2},
		{name: "one interval after the check: asks again", at: interval, model: "m", wantOpen: true, wantCalls: 3},
		{name: "open answer cached", at: interval + 500*time.Millisecond, model: "m", wantOpen: true, wantCalls: 3},
		{name: "other model still cached", at: interval + 500*time.Millisecond, model: "other", wantCalls: 3},
		{name: "other model refreshed after its own interval", at: 2*interval - time.Millisecond, model: "other", wantCalls: 4},
	}
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			src := &countingSource{src: s}
			clock := newFakeClock()
			start := clock.now()
			c := cooldown.NewStatusCache(src, interval)
			cooldown.SetStatusCacheClock(c, clock.now)
			var last time.Time
			for _, st := range steps {
				if st.openFirst {
					openCooldown(t, s, st.model)
				}
				clock.set(start.Add(st.at))
				until, err := c.Status(context.Background(), st.model)
				if err != nil {
					t.Fatalf("%s: %v", st.name, err)
				}
				if open := until.After(time.Now()); open != st.wantOpen {
					t.Fatalf("%s: until = %v, open = %v, want %v", st.name, until, open, st.wantOpen)
				}
				if got := src.calls.Load(); got != st.wantCalls {
					t.Fatalf("%s: %d store calls, want %d", st.name, got, st.wantCalls)
				}
				if st.name == "open answer cached" && !until.Equal(last) {
					t.Fatalf("%s: until = %v, want the cached %v", st.name, until, last)
				}
				last = until
			}
		})
	}
}

// scriptedSource answers with the next of its answers.
type scriptedSource struct {
	mu      sync.Mutex
	answers []scripted
	calls   int
}

type scripted struct {
	until time.Time
	err   error
}

func (s *scriptedSource) Status(ctx context.Context, model string) (time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calls >= len(s.answers) {
		return time.Time{}, errors.New("unexpected store call")
	}
	a := s.answers[s.calls]
	s.calls++
	return a.until, a.err
}

func TestStatusCacheDoesNotCacheErrors(t *testing.T) {
	errDown := errors.New("store down")
	open := time.Now().Add(time.Minute)
	src := &scriptedSource{answers: []scripted{{err: errDown}, {err: errDown}, {until: open}}}
	c := cooldown.NewStatusCache(src, time.Hour)
	clock := newFakeClock()
	cooldown.SetStatusCacheClock(c, clock.now)
	for i := range 2 {
		if _, err := c.Status(context.Background(), "m"); !errors.Is(err, errDown) {
			t.Fatalf("call %d: err = %v, want the store's error", i+1, err)
		}
	}
	until, err := c.Status(context.Background(), "m")
	if err != nil || !until.Equal(open) {
		t.Fatalf("after the store recovered: %v %v, want %v", until, err, open)
	}
	if until, err := c.Status(context.Background(), "m"); err != nil || !until.Equal(open) {
		t.Fatalf("cached: %v %v, want %v", until, err, open)
	}
	if src.calls != 3 {
		t.Fatalf("%d store calls, want 3 (errors not cached, then one success cached)", src.calls)
	}
}

func TestStatusCacheDisabledAsksEveryTime(t *testing.T) {
	for _, interval := range []time.Duration{0, -time.Second} {
		src := &countingSource{src: cooldown.NewMemory(cfg())}
		c := cooldown.NewStatusCache(src, interval)
		cooldown.SetStatusCacheClock(c, newFakeClock().now) // a clock that never moves
		for range 3 {
			if _, err := c.Status(context.Background(), "m"); err != nil {
				t.Fatal(err)
			}
		}
		if got := src.calls.Load(); got != 3 {
			t.Fatalf("interval %v: %d store calls, want 3", interval, got)
		}
	}
}

// gatedSource holds every call until the test answers it.
type gatedSource struct{ calls chan chan time.Time }

func (g *gatedSource) Status(ctx context.Context, model string) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	reply := make(chan time.Time)
	g.calls <- reply
	return <-reply, nil
}

func TestStatusCacheKeepsTheNewestOfConcurrentRefreshes(t *testing.T) {
	g := &gatedSource{calls: make(chan chan time.Time)}
	clock := newFakeClock()
	start := clock.now()
	c := cooldown.NewStatusCache(g, time.Second)
	cooldown.SetStatusCacheClock(c, clock.now)
	status := func() <-chan time.Time {
		out := make(chan time.Time, 1)
		go func() {
			until, err := c.Status(context.Background(), "m")
			if err != nil {
				t.Error(err)
			}
			out <- until
		}()
		return out
	}

	// An old refresh is still waiting for the store when a newer one
	// (started two intervals later) gets "open" back.
	oldDone := status()
	oldReply := <-g.calls
	clock.set(start.Add(2 * time.Second))
	newDone := status()
	newReply := <-g.calls
	open := start.Add(time.Hour)
	newReply <- open
	if got := <-newDone; !got.Equal(open) {
		t.Fatalf("new refresh returned %v, want %v", got, open)
	}
	oldReply <- time.Time{} // the old refresh ends last, with "closed"
	if got := <-oldDone; !got.IsZero() {
		t.Fatalf("old refresh returned %v, want its own answer (zero)", got)
	}

	// The newer answer stays cached. A cancelled context makes any store
	// call fail, so a nil error proves the answer came from the cache.
	clock.set(start.Add(2*time.Second + 500*time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	until, err := c.Status(ctx, "m")
	if err != nil || !until.Equal(open) {
		t.Fatalf("cached = %v %v, want the newer answer %v", until, err, open)
	}
}

func TestStatusCacheConcurrentUse(t *testing.T) {
	src := &countingSource{src: cooldown.NewMemory(cfg())}
	c := cooldown.NewStatusCache(src, time.Hour)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			model := []string{"a", "b"}[i%2]
			for range 100 {
				if _, err := c.Status(context.Background(), model); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	// Refreshes may overlap while an entry is missing, but once cached the
	// store is not asked again: far fewer calls than the 1600 made.
	if got := src.calls.Load(); got < 2 || got > 32 {
		t.Fatalf("%d store calls for 2 models and 16 goroutines, want 2..32", got)
	}
}

func TestStatusCacheObserve(t *testing.T) {
	open := time.Now().Add(time.Minute)
	t.Run("an observed cooldown is answered without asking the store", func(t *testing.T) {
		src := &countingSource{src: cooldown.NewMemory(cfg())}
		c := cooldown.NewStatusCache(src, time.Hour)
		cooldown.SetStatusCacheClock(c, newFakeClock().now)
		if until, err := c.Status(context.Background(), "m"); err != nil || !until.IsZero() {
			t.Fatalf("before: %v %v, want closed", until, err)
		}
		c.Observe("m", open)
		if until, err := c.Status(context.Background(), "m"); err != nil || !until.Equal(open) {
			t.Fatalf("after Observe: %v %v, want %v", until, err, open)
		}
		if got := src.calls.Load(); got != 1 {
			t.Fatalf("%d store calls, want 1", got)
		}
	})
	t.Run("disabled cache ignores it", func(t *testing.T) {
		c := cooldown.NewStatusCache(cooldown.NewMemory(cfg()), 0)
		c.Observe("m", open)
		if until, err := c.Status(context.Background(), "m"); err != nil || !until.IsZero() {
			t.Fatalf("%v %v, want the store's answer (closed)", until, err)
		}
	})
	t.Run("nil cache", func(t *testing.T) {
		var c *cooldown.StatusCache
		c.Observe("m", open) // must not panic
	})
}
