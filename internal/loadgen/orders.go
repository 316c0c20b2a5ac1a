package loadgen

import (
	"context"
	"fmt"
)

// maxOrders is the size of the demo catalogue (support.DemoOrders:
// A-1001 … A-1100). The simulated model refunds an order's whole refundable
// amount, so one order can be refunded once until its booking is reset.
const maxOrders = 100

// orderPool hands every in-flight invocation an order of its own, so that
// each one really executes its refund. An order used before is reset (its
// refunded amount set back to 0, the refund records kept) before it is
// handed out again; the reset happens outside the timed submit → result
// span. Without a pool (more than 100 in flight) orders are shared and only
// the first refund of an order per booking executes; the others get the
// "amount exceeds the refundable amount" answer, still with three model
// calls.
type orderPool struct {
	free  chan int
	used  []bool
	reset func(ctx context.Context, orderID string) error
}

func newOrderPool(reset func(ctx context.Context, orderID string) error) *orderPool {
	p := &orderPool{free: make(chan int, maxOrders), used: make([]bool, maxOrders), reset: reset}
	for i := range maxOrders {
		p.free <- i
	}
	return p
}

func orderID(i int) string { return fmt.Sprintf("A-%d", 1001+i%maxOrders) }

// take returns a free order, reset if it was used before.
func (p *orderPool) take(ctx context.Context) (int, error) {
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case i := <-p.free:
		if p.used[i] && p.reset != nil {
			if err := p.reset(ctx, orderID(i)); err != nil {
				p.free <- i
				return 0, fmt.Errorf("loadgen: reset order %s: %w", orderID(i), err)
			}
		}
		p.used[i] = true
		return i, nil
	}
}

// markAllUsed makes every order be reset before it is first handed out.
func (p *orderPool) markAllUsed() {
	for i := range p.used {
		p.used[i] = true
	}
}

// put returns an order whose invocation finished.
func (p *orderPool) put(i int) { p.free <- i }
