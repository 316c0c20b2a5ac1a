package support

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// FaultyOrders wraps an Orders service so that a share of its calls fail
// with ErrUnavailable before any work is done: the simulated "tool faults"
// of chaos runs (config model.sim.tool_faults). A failed Refund has no
// effect, so a retry may run it again.
type FaultyOrders struct {
	next Orders
	p    float64

	mu  sync.Mutex
	rng *rand.Rand

	failed atomic.Int64
}

// NewFaultyOrders returns next failing each call with probability p (0 to
// 1), drawn from a source seeded with seed.
func NewFaultyOrders(next Orders, p float64, seed uint64) *FaultyOrders {
	return &FaultyOrders{next: next, p: p, rng: rand.New(rand.NewPCG(seed, 0x746f6f6c))}
}

func (f *FaultyOrders) fault(call string) error {
	f.mu.Lock()
	hit := f.rng.Float64() < f.p
	f.mu.Unlock()
	if !hit {
		return nil
	}
	f.failed.Add(1)
	return fmt.Errorf("%w: simulated tool fault (%s)", ErrUnavailable, call)
}

// Get implements Orders.
func (f *FaultyOrders) Get(ctx context.Context, orderID string) (Order, error) {
	if err := f.fault("get"); err != nil {
		return Order{}, err
	}
	return f.next.Get(ctx, orderID)
}

// Refund implements Orders.
func (f *FaultyOrders) Refund(ctx context.Context, r Refund) error {
	if err := f.fault("refund"); err != nil {
		return err
	}
	return f.next.Refund(ctx, r)
}

// Failed returns the number of calls failed so far.
func (f *FaultyOrders) Failed() int64 { return f.failed.Load() }
