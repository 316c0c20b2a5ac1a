package retry

import (
	"fmt"
	"time"
)

// Reasons the decorator stopped retrying a retryable failure.
const (
	// ReasonMaxAttempts: Config.MaxAttempts attempts were made.
	ReasonMaxAttempts = "max_attempts"
	// ReasonBudget: the model's retry budget refused the retry.
	ReasonBudget = "retry_budget"
	// ReasonHintTooLong: the server asked for a wait above Config.MaxHint.
	ReasonHintTooLong = "hint_too_long"
	// ReasonDeadline: the wait would not fit in the context's deadline.
	ReasonDeadline = "deadline"
	// ReasonCanceled: the context ended while waiting.
	ReasonCanceled = "canceled"
	// ReasonOutputEmitted: the call had already yielded a response.
	ReasonOutputEmitted = "output_emitted"
	// ReasonNotRetryable: a retry failed with a class that is not
	// retryable.
	ReasonNotRetryable = "not_retryable"
	// ReasonCallBudget: the invocation's call budget refused the retry
	// (PerAttempt accounting).
	ReasonCallBudget = "call_budget"
	// ReasonNotSent: a decorator below refused the retry before it reached
	// the provider (model.ErrNotSent: the fleet cooldown opened after the
	// last attempt). Err is the last provider attempt's error and Cause the
	// refusal, so the failure is classified by what the provider answered
	// and the caller still sees the refusal (errors.As a cooldown's
	// OpenError) to hold the work until the cooldown ends.
	ReasonNotSent = "not_sent"
)

// GaveUpError ends a call whose failure was retryable, or that made more
// than one attempt, and says why the decorator stopped. It wraps the last
// attempt's error (and, for ReasonCanceled or ReasonCallBudget, the
// context's or budget's error as well), so taxonomy.ClassifyError and
// errors.Is/As see through it. A non-retryable failure on the first
// attempt is returned unchanged.
type GaveUpError struct {
	// Model is the decorated model's name.
	Model string
	// Attempts is the number of provider attempts made (a refused one,
	// ReasonNotSent, is not counted).
	Attempts int
	// Reason is one of the Reason constants.
	Reason string
	// Err is the last attempt's error.
	Err error
	// Cause is the error that stopped retrying when it is not Err (the
	// context's error, a *model.CallBudgetError, a refusal before the
	// provider); nil otherwise.
	Cause error
}

// Error implements error.
func (e *GaveUpError) Error() string {
	s := fmt.Sprintf("model %s: gave up after %d attempt(s) (%s)", e.Model, e.Attempts, e.Reason)
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the stopping cause (if any) and the last attempt's error,
// so errors.Is and errors.As match either.
func (e *GaveUpError) Unwrap() []error {
	var out []error
	if e.Cause != nil {
		out = append(out, e.Cause)
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

// AttemptTimeoutError ends a provider attempt that ran past
// Config.AttemptTimeout while the caller's context was still live. It
// reports Timeout() true and wraps the attempt's own error (normally
// context.DeadlineExceeded), so taxonomy.ClassifyError gives TIMEOUT unless
// the provider answered with a status first.
type AttemptTimeoutError struct {
	// Model is the decorated model's name.
	Model string
	// After is the Config.AttemptTimeout that passed.
	After time.Duration
	// Err is the error the attempt ended with.
	Err error
}

// Error implements error.
func (e *AttemptTimeoutError) Error() string {
	return fmt.Sprintf("model %s: attempt timed out after %s: %v", e.Model, e.After, e.Err)
}

// Unwrap returns the attempt's error.
func (e *AttemptTimeoutError) Unwrap() error { return e.Err }

// Timeout reports true: the attempt ran out of time (net.Error's method,
// which the classifier reads).
func (e *AttemptTimeoutError) Timeout() bool { return true }
