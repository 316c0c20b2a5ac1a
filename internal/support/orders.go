package support

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Order is a customer order.
type Order struct {
	ID            string `json:"order_id"`       // ID is the order id (e.g. "A-1042").
	Customer      string `json:"customer"`       // Customer names the customer.
	TotalCents    int    `json:"total_cents"`    // TotalCents is the order total in cents.
	RefundedCents int    `json:"refunded_cents"` // RefundedCents is the amount refunded so far, in cents.
	Status        string `json:"status"`         // Status is e.g. "delivered" (the default) or "refunded".
}

// Refund is one executed refund: the effect that must happen once.
type Refund struct {
	InvocationID   string `json:"invocation_id"`             // InvocationID is the invocation that ran the refund.
	OrderID        string `json:"order_id"`                  // OrderID is the refunded order.
	AmountCents    int    `json:"amount_cents"`              // AmountCents is the refunded amount in cents.
	IdempotencyKey string `json:"idempotency_key,omitempty"` // IdempotencyKey is the tool call's idempotency key, if any.
}

// Errors an orders service returns.
var (
	ErrOrderNotFound = errors.New("orders: order not found")
	// ErrUnavailable is a downstream outage known to have done nothing (the
	// request was not sent, or the service refused it): retrying may help.
	ErrUnavailable = errors.New("orders: service unavailable")
	// ErrMayHaveApplied means a request went out and no answer came back
	// (a reply lost with its connection, a read that timed out): the
	// refund may have been booked. Only a call under the same idempotency
	// key may safely be made again (every Orders implementation books a
	// key once).
	ErrMayHaveApplied = errors.New("orders: no answer: the request may have been applied")
	// ErrNotAuthorised is a credential problem the model cannot fix.
	ErrNotAuthorised = errors.New("orders: not authorised")
	// ErrAmountTooLarge means the refund exceeds what is left to refund.
	ErrAmountTooLarge = errors.New("orders: refund exceeds the refundable amount")
	// ErrAmountNotPositive means a refund of zero or less: every store
	// refuses it (a negative one would raise what is left to refund).
	ErrAmountNotPositive = errors.New("orders: refund amount must be positive")
)

// Orders is the downstream orders service the tools call.
type Orders interface {
	// Get returns an order or ErrOrderNotFound; an error matching
	// ctx.Err() when ctx ended, not ErrUnavailable.
	Get(ctx context.Context, orderID string) (Order, error)
	// Refund executes a refund: a real side effect, recorded once per call,
	// except that a refund whose non-empty IdempotencyKey was booked
	// before returns nil and books nothing, as a payment provider honours
	// an Idempotency-Key header: a call whose reply was lost can be made
	// again (the tool reports it retryable and the claim is released).
	// A call whose reply is lost returns ErrMayHaveApplied, one that
	// failed before its request went out ErrUnavailable, and one whose ctx
	// ended an error matching ctx.Err() (with ErrMayHaveApplied too when
	// the request had gone out).
	Refund(ctx context.Context, r Refund) error
}

// MemoryOrders is an in-memory Orders for tests: its refunds vanish with
// the process. The demo and the workers use NATSOrders or RedisOrders.
// Fault hooks let tests make calls fail.
type MemoryOrders struct {
	mu      sync.Mutex
	orders  map[string]*Order
	refunds []Refund
	// FailGet and FailRefund, when non-nil, are consulted before each call;
	// a non-nil error is returned instead of doing the work.
	FailGet    func(orderID string) error
	FailRefund func(r Refund) error // FailRefund, if non-nil, can fail a Refund call.
}

// NewMemoryOrders returns a service holding orders.
func NewMemoryOrders(orders ...Order) *MemoryOrders {
	m := &MemoryOrders{orders: map[string]*Order{}}
	for _, o := range orders {
		o := o
		if o.Status == "" {
			o.Status = "delivered"
		}
		m.orders[o.ID] = &o
	}
	return m
}

// DemoOrders returns the orders the demo and tests use: A-1001 … A-1100,
// each with a total of 1,000 + 13×n cents, plus A-1042 at 12,99 € as in the
// seed.
func DemoOrders() []Order {
	out := make([]Order, 0, 101)
	for n := 1; n <= 100; n++ {
		out = append(out, Order{ID: fmt.Sprintf("A-%d", 1000+n), Customer: fmt.Sprintf("c%03d", n), TotalCents: 1000 + 13*n})
	}
	for i := range out {
		if out[i].ID == "A-1042" {
			out[i].TotalCents = 1299
		}
	}
	return out
}

// Get implements Orders.
func (m *MemoryOrders) Get(ctx context.Context, orderID string) (Order, error) {
	if err := ctx.Err(); err != nil {
		return Order{}, err
	}
	if m.FailGet != nil {
		if err := m.FailGet(orderID); err != nil {
			return Order{}, err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.orders[orderID]
	if !ok {
		return Order{}, ErrOrderNotFound
	}
	return *o, nil
}

// Refund implements Orders.
func (m *MemoryOrders) Refund(ctx context.Context, r Refund) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if r.AmountCents <= 0 {
		return fmt.Errorf("%w: %d cents", ErrAmountNotPositive, r.AmountCents)
	}
	if m.FailRefund != nil {
		if err := m.FailRefund(r); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.orders[r.OrderID]
	if !ok {
		return ErrOrderNotFound
	}
	if r.IdempotencyKey != "" {
		for _, done := range m.refunds {
			if done.IdempotencyKey == r.IdempotencyKey {
				return nil // booked before
			}
		}
	}
	if r.AmountCents > o.TotalCents-o.RefundedCents {
		return ErrAmountTooLarge
	}
	o.RefundedCents += r.AmountCents
	if o.RefundedCents == o.TotalCents {
		o.Status = "refunded"
	}
	m.refunds = append(m.refunds, r)
	return nil
}

// Refunds returns every executed refund, in order.
func (m *MemoryOrders) Refunds() []Refund {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Refund(nil), m.refunds...)
}

// ctxEnded returns ctx's error when it has ended, context.DeadlineExceeded
// when its deadline has passed (a socket deadline set from it can fire a
// moment before the context's own timer), nil otherwise.
func ctxEnded(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// endedError is err, from a call whose ctx ended with cerr, as an error
// matching cerr: the caller cut the call short; the service did not fail.
func endedError(cerr, err error) error {
	if errors.Is(err, cerr) {
		return err
	}
	return fmt.Errorf("%w (%w)", cerr, err)
}

// refundError is the error of a refund of orderID whose call failed with
// err: notApplied says the request is known not to have been applied. A
// refund cut short by its ctx matches ctx's error (the loop treats the call
// as interrupted or timed out, not the model); one that may have been
// applied matches ErrMayHaveApplied; one known not applied, ErrUnavailable.
// Every failure used to be ErrUnavailable, and refund_order answered a
// refund booked before its reply was lost as a plain retryable outage
// (found in review, twentieth session).
func refundError(ctx context.Context, orderID string, err error, notApplied bool) error {
	if cerr := ctxEnded(ctx); cerr != nil {
		err = endedError(cerr, err)
		if notApplied {
			return fmt.Errorf("orders: refund %s: %w", orderID, err)
		}
		return fmt.Errorf("%w: refund %s: %w", ErrMayHaveApplied, orderID, err)
	}
	if notApplied {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return fmt.Errorf("%w: refund %s: %w", ErrMayHaveApplied, orderID, err)
}
