package cooldown

import (
	"context"
	"sync"
	"time"
)

// Memory is a Store for one process.
type Memory struct {
	cfg Config
	now func() time.Time

	mu     sync.Mutex
	models map[string]*memModel
}

type memModel struct {
	calls, fails map[int64]int // bucket index -> count
	until        time.Time
}

// NewMemory returns an in-process store.
func NewMemory(cfg Config) *Memory {
	return &Memory{cfg: cfg.WithDefaults(), now: time.Now, models: map[string]*memModel{}}
}

// Record implements Store.
func (m *Memory) Record(ctx context.Context, model string, transient bool) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	mm := m.models[model]
	if mm == nil {
		mm = &memModel{calls: map[int64]int{}, fails: map[int64]int{}}
		m.models[model] = mm
	}
	if now.Before(mm.until) {
		return mm.until, nil // open: nothing is counted (see Store.Record)
	}
	b := now.UnixNano() / int64(m.cfg.bucketSize())
	mm.calls[b]++
	if transient {
		mm.fails[b]++
	}
	calls, fails := 0, 0
	for k := range mm.calls {
		if k <= b-int64(m.cfg.Buckets) {
			delete(mm.calls, k)
			delete(mm.fails, k)
			continue
		}
		calls += mm.calls[k]
		fails += mm.fails[k]
	}
	if calls >= m.cfg.MinCalls && float64(fails) >= m.cfg.Threshold*float64(calls) {
		mm.until = now.Add(m.cfg.Duration)
		clear(mm.calls) // the window starts afresh when the cooldown ends
		clear(mm.fails)
		return mm.until, nil
	}
	return time.Time{}, nil
}

// Status implements Store.
func (m *Memory) Status(ctx context.Context, model string) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if mm := m.models[model]; mm != nil && m.now().Before(mm.until) {
		return mm.until, nil
	}
	return time.Time{}, nil
}
