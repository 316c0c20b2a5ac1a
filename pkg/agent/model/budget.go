package model

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
)

// ErrCallBudgetExceeded is the sentinel matched by errors.Is for every
// *CallBudgetError.
var ErrCallBudgetExceeded = errors.New("model call budget exceeded")

// CallBudgetError ends an invocation that tried to make more model calls
// than its budget allows (ADK Java's LlmCallsLimitExceededException).
type CallBudgetError struct {
	// Limit is the configured budget.
	Limit int
	// Attempted is the call number that was refused (Limit+1).
	Attempted int
}

// Error implements error.
func (e *CallBudgetError) Error() string {
	return fmt.Sprintf("model call budget exceeded: call %d refused, limit %d", e.Attempted, e.Limit)
}

// Is makes errors.Is(err, ErrCallBudgetExceeded) true.
func (e *CallBudgetError) Is(target error) bool { return target == ErrCallBudgetExceeded }

// CallBudget counts model calls against a per-invocation limit. It is safe
// for concurrent use. The agent loop charges it once per step before the
// model call; a retry decorator configured to count every provider attempt
// charges it again for each retry (see ChargeFromContext).
type CallBudget struct {
	limit int
	used  atomic.Int64
}

// NewCallBudget returns a budget of limit calls. A limit <= 0 means
// unlimited (the agent's config maps 0 to its default before calling this).
func NewCallBudget(limit int) *CallBudget { return &CallBudget{limit: limit} }

// Charge counts one call. It returns a *CallBudgetError, without counting,
// when the call would exceed the limit.
func (b *CallBudget) Charge() error {
	if b == nil {
		return nil
	}
	n := b.used.Add(1)
	if b.limit > 0 && int(n) > b.limit {
		b.used.Add(-1)
		return &CallBudgetError{Limit: b.limit, Attempted: int(n)}
	}
	return nil
}

// Refund gives back one charged call: a charge for a call that was then
// not made (a retry the fleet cooldown refused before the provider). It
// never takes the count below zero.
func (b *CallBudget) Refund() {
	if b == nil {
		return
	}
	for {
		n := b.used.Load()
		if n <= 0 || b.used.CompareAndSwap(n, n-1) {
			return
		}
	}
}

// Preload records n calls already made (a resumed invocation's earlier
// calls) without checking the limit.
func (b *CallBudget) Preload(n int) {
	if b != nil && n > 0 {
		b.used.Add(int64(n))
	}
}

// Used returns the number of calls charged so far.
func (b *CallBudget) Used() int {
	if b == nil {
		return 0
	}
	return int(b.used.Load())
}

// Limit returns the configured limit (<= 0 means unlimited).
func (b *CallBudget) Limit() int {
	if b == nil {
		return 0
	}
	return b.limit
}

type budgetKey struct{}

// WithCallBudget returns a context carrying b, so that decorators below the
// agent loop can charge provider attempts against the invocation's budget.
func WithCallBudget(ctx context.Context, b *CallBudget) context.Context {
	return context.WithValue(ctx, budgetKey{}, b)
}

// CallBudgetFrom returns the budget carried by ctx, or nil.
func CallBudgetFrom(ctx context.Context) *CallBudget {
	b, _ := ctx.Value(budgetKey{}).(*CallBudget)
	return b
}
