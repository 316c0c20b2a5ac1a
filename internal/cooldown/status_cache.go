package cooldown

import (
	"context"
	"sync"
	"time"
)

// StatusSource reports the end of a model's open cooldown (the zero time
// when none is open). Every Store is one; so is a StatusCache.
type StatusSource interface {
	Status(ctx context.Context, model string) (until time.Time, err error)
}

// StatusCache is a StatusSource that asks its source at most once per
// interval per model and answers from memory in between, the same staleness
// the Model decorator accepts (Config.CheckInterval): a cooldown that opens
// is seen at most one interval late. A cached answer is the cooldown's end
// as the source gave it, so a cooldown seen open still ends on time for a
// caller that compares it with the clock. Errors of the source are returned
// as they are and are not cached, so the next call asks again. It is safe
// for concurrent use.
type StatusCache struct {
	src      StatusSource
	interval time.Duration
	now      func() time.Time

	mu      sync.Mutex
	entries map[string]statusEntry // model → last answer
}

// statusEntry is a model's last answer from the source.
type statusEntry struct {
	until     time.Time // end of the open cooldown; zero: none
	checkedAt time.Time // when the call that got until started
}

// NewStatusCache returns a cache in front of src that asks src at most once
// per interval per model (pass Config.CheckInterval). An interval that is
// not positive disables the cache: every call asks src.
func NewStatusCache(src StatusSource, interval time.Duration) *StatusCache {
	return &StatusCache{src: src, interval: interval, now: time.Now, entries: map[string]statusEntry{}}
}

// Status implements StatusSource: the cached end of model's cooldown if the
// last answer is younger than the interval, else the source's answer.
func (c *StatusCache) Status(ctx context.Context, model string) (time.Time, error) {
	if c.interval <= 0 {
		return c.src.Status(ctx, model)
	}
	now := c.now()
	c.mu.Lock()
	e, ok := c.entries[model]
	c.mu.Unlock()
	if ok && now.Sub(e.checkedAt) < c.interval {
		return e.until, nil
	}
	until, err := c.src.Status(ctx, model)
	if err != nil {
		return time.Time{}, err
	}
	c.store(model, until, now)
	return until, nil
}

// store records until as model's status as of checkedAt. Concurrent
// refreshes may finish out of order: the answer of the call that started
// last is kept, so an entry never gets older.
func (c *StatusCache) store(model string, until, checkedAt time.Time) {
	c.mu.Lock()
	if cur, ok := c.entries[model]; !ok || !checkedAt.Before(cur.checkedAt) {
		c.entries[model] = statusEntry{until: until, checkedAt: checkedAt}
	}
	c.mu.Unlock()
}

// Observe records until as model's current status, as if the source had
// just answered it: a caller that learnt of a cooldown another way (an
// *OpenError from the Model decorator) makes the next Status calls see it
// without waiting for the interval to pass. It does nothing on a nil
// *StatusCache or when the cache is disabled.
func (c *StatusCache) Observe(model string, until time.Time) {
	if c == nil || c.interval <= 0 {
		return
	}
	c.store(model, until, c.now())
}
