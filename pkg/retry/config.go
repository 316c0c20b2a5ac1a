package retry

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Defaults used by Config.WithDefaults for zero fields.
const (
	// DefaultMaxAttempts is the total number of attempts per call,
	// including the first.
	DefaultMaxAttempts = 2
	// DefaultInitialInterval is the base wait before the first retry.
	DefaultInitialInterval = 500 * time.Millisecond
	// DefaultMultiplier grows the base wait per retry.
	DefaultMultiplier = 2.0
	// DefaultMaxInterval caps the base wait.
	DefaultMaxInterval = 8 * time.Second
	// DefaultMaxHint is the longest server hint honoured; a longer one
	// fails fast.
	DefaultMaxHint = 30 * time.Second
	// DefaultBudgetMaxTokens is the retry budget's capacity (gRPC
	// retryThrottling.maxTokens). Retries are allowed only while the
	// tokens are above half of it.
	DefaultBudgetMaxTokens = 10.0
	// DefaultBudgetTokenRatio is what a successful attempt adds to the
	// budget (gRPC retryThrottling.tokenRatio).
	DefaultBudgetTokenRatio = 0.1
	// DefaultAttemptTimeout bounds one provider attempt: long enough for
	// a long answer, short enough that a provider which accepted the
	// request and never answers does not hold the invocation (and its
	// session lock and message) for ever.
	DefaultAttemptTimeout = 2 * time.Minute
)

// Accounting selects how retries count against an invocation's model-call
// budget (model.CallBudget).
type Accounting int

const (
	// PerCall (the default) counts the attempts inside one call as one
	// model call: the agent loop charges the budget once per step and the
	// decorator charges nothing. The budget then limits reasoning steps;
	// provider requests are visible in the attempts metric.
	PerCall Accounting = iota
	// PerAttempt also charges every retry (attempt 2, 3, ...) to the
	// budget carried by the context (model.CallBudgetFrom). The loop has
	// already charged the first attempt. A retry is charged before its
	// wait (given back if the wait is cut short), so when the budget
	// refuses, the call ends at once with the *model.CallBudgetError
	// (classified CALL_BUDGET), joined with the last attempt's error.
	PerAttempt
)

// String returns "per_call" or "per_attempt".
func (a Accounting) String() string {
	switch a {
	case PerCall:
		return "per_call"
	case PerAttempt:
		return "per_attempt"
	default:
		return fmt.Sprintf("Accounting(%d)", int(a))
	}
}

// Config configures the decorator. Zero fields take the documented
// defaults (see WithDefaults).
type Config struct {
	// MaxAttempts is the total number of attempts per call, first
	// included. Default 2: one retry; 1 disables retrying.
	MaxAttempts int
	// InitialInterval is the base wait before the first retry. Default
	// 500ms.
	InitialInterval time.Duration
	// Multiplier grows the base wait for each further retry. Default 2.
	Multiplier float64
	// MaxInterval caps the base wait. Default 8s.
	MaxInterval time.Duration
	// MaxHint is the longest server retry hint honoured. A hint above it
	// fails the call at once, without sleeping. Default 30s.
	MaxHint time.Duration
	// BudgetMaxTokens is the capacity of the per-model retry budget.
	// Default 10. Used when the decorator creates or looks up its budget.
	BudgetMaxTokens float64
	// BudgetTokenRatio is what a success adds to the budget. Default 0.1.
	BudgetTokenRatio float64
	// DisableBudget turns the retry budget off (tests, single-user tools).
	DisableBudget bool
	// Accounting selects the call-budget semantics. Default PerCall.
	Accounting Accounting
	// AttemptTimeout is the longest one provider attempt may take, from
	// the request to its last response (a stream's time between responses
	// included). An attempt still running then is cancelled and fails with
	// an *AttemptTimeoutError, classified TIMEOUT and retried as any
	// timeout (never once a response was forwarded). Default
	// DefaultAttemptTimeout (2m); a negative value means no limit but the
	// context's.
	AttemptTimeout time.Duration
}

// WithDefaults returns a copy of c with zero fields set to the defaults.
// Full jitter is always on: the wait before retry n is a uniformly random
// duration in [0, min(MaxInterval, InitialInterval*Multiplier^(n-1))].
func (c Config) WithDefaults() Config {
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.InitialInterval == 0 {
		c.InitialInterval = DefaultInitialInterval
	}
	if c.Multiplier == 0 {
		c.Multiplier = DefaultMultiplier
	}
	if c.MaxInterval == 0 {
		c.MaxInterval = DefaultMaxInterval
	}
	if c.MaxHint == 0 {
		c.MaxHint = DefaultMaxHint
	}
	if c.BudgetMaxTokens == 0 {
		c.BudgetMaxTokens = DefaultBudgetMaxTokens
	}
	if c.BudgetTokenRatio == 0 {
		c.BudgetTokenRatio = DefaultBudgetTokenRatio
	}
	if c.AttemptTimeout == 0 {
		c.AttemptTimeout = DefaultAttemptTimeout
	}
	return c
}

// Validate reports settings the decorator cannot run with. Call it on the
// result of WithDefaults.
func (c Config) Validate() error {
	var errs []error
	if c.MaxAttempts < 1 {
		errs = append(errs, fmt.Errorf("retry: MaxAttempts must be >= 1, got %d", c.MaxAttempts))
	}
	if c.InitialInterval <= 0 {
		errs = append(errs, fmt.Errorf("retry: InitialInterval must be > 0, got %s", c.InitialInterval))
	}
	if c.Multiplier < 1 || math.IsNaN(c.Multiplier) || math.IsInf(c.Multiplier, 0) {
		errs = append(errs, fmt.Errorf("retry: Multiplier must be finite and >= 1, got %g", c.Multiplier))
	}
	if c.MaxInterval < c.InitialInterval {
		errs = append(errs, fmt.Errorf("retry: MaxInterval (%s) must be >= InitialInterval (%s)", c.MaxInterval, c.InitialInterval))
	}
	if c.MaxHint < 0 {
		errs = append(errs, fmt.Errorf("retry: MaxHint must be >= 0, got %s", c.MaxHint))
	}
	// NaN and ±Inf pass the comparisons below, and then the budget never
	// allows a retry (Inf > Inf is false; a NaN ratio makes the tokens NaN
	// after the first success): refused (found in review, twenty-first
	// session).
	if c.BudgetMaxTokens <= 0 || math.IsNaN(c.BudgetMaxTokens) || math.IsInf(c.BudgetMaxTokens, 0) {
		errs = append(errs, fmt.Errorf("retry: BudgetMaxTokens must be finite and > 0, got %g", c.BudgetMaxTokens))
	}
	if c.BudgetTokenRatio < 0 || math.IsNaN(c.BudgetTokenRatio) || math.IsInf(c.BudgetTokenRatio, 0) {
		errs = append(errs, fmt.Errorf("retry: BudgetTokenRatio must be finite and >= 0, got %g", c.BudgetTokenRatio))
	}
	if c.Accounting != PerCall && c.Accounting != PerAttempt {
		errs = append(errs, fmt.Errorf("retry: unknown Accounting %d", int(c.Accounting)))
	}
	return errors.Join(errs...)
}
