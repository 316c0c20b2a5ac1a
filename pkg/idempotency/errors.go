package idempotency

import (
	"errors"
	"fmt"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// ErrStoreUnavailable is matched (errors.Is) by every *StoreError: the store
// could not be reached or did not answer, and the tool was not run (fail
// closed). A worker puts the message back with a delay.
var ErrStoreUnavailable = errors.New("idempotency: store unavailable")

// ErrNotOwner is returned by Renew, Complete and Release when the key is held
// (in progress or completed) by another owner token: the caller's lease
// expired and was taken over. The caller must not overwrite the record.
var ErrNotOwner = errors.New("idempotency: not the owner of the claim")

// ErrLeaseLost is returned by Renew, Complete and Release when the key has no
// record any more (the in-progress record expired and nobody holds it).
var ErrLeaseLost = errors.New("idempotency: claim lost (no record for the key)")

// ErrInProgress is matched (errors.Is) by every *InProgressError.
var ErrInProgress = errors.New("idempotency: call in progress elsewhere")

// ErrNoInvocationID is returned by a wrapped tool whose context carries no
// tool.Context or an empty invocation id: without it no key can be derived.
var ErrNoInvocationID = errors.New("idempotency: no invocation id in the tool context")

// ErrNotApplied is what a wrapped tool wraps its error with (fmt.Errorf("…:
// %w", idempotency.ErrNotApplied)) when the effect did not happen, or when
// repeating it is harmless because the service behind it deduplicates by
// the idempotency key (KeyFromContext): the wrapper then releases the claim
// and a retry runs the tool again. Any other error leaves the outcome
// unknown, so the wrapper stores an "outcome_unknown" error map instead and
// no retry, redelivery or replay runs the effect a second time. Argument
// errors (tool.ErrInvalidArguments) count as not applied.
var ErrNotApplied = errors.New("idempotency: the effect was not applied")

// ErrResultTooLarge is returned (wrapped) by a store's Complete when the
// record with this result is larger than the backend can ever hold (NATS
// KV: the server's max_payload, 1 MiB by default). It is not a
// *StoreError: retrying cannot help. The wrapper then stores a small
// "result_not_recorded" error map instead, with what the tool asked of the
// loop (state changes, the end of the invocation) so a replay gives it the
// same; the key is completed and no retry, redelivery or replay runs the
// effect again.
var ErrResultTooLarge = errors.New("idempotency: result too large for the store")

// ErrKeyTooLong is returned (wrapped) by a store given a key or invocation
// id longer than its backend can address (NATS KV: natskv.MaxKeyLen bytes
// once escaped; a longer subject would make the server close the shared
// connection). Nothing is sent to the backend, and the store stays usable.
// It is not a *StoreError and does not match ErrStoreUnavailable: the store
// is not down, and no retry of the same key or id can succeed. Keys from
// request envelopes within their limits always fit; a longer one comes from
// configuration (key prefix, agent or tool name) or from an id a caller
// passed by hand.
var ErrKeyTooLong = errors.New("idempotency: key too long for the store")

// ErrMissingKeyField is matched (errors.Is) by every *KeyFieldError.
var ErrMissingKeyField = errors.New("idempotency: missing key field")

// StoreError reports a store operation that failed for a reason other than
// the claim's state: a network error, a timeout, a server error. It matches
// ErrStoreUnavailable and unwraps to the backend's error.
type StoreError struct {
	// Backend names the store ("memory", "redis", "natskv").
	Backend string
	// Op is the store operation ("claim", "renew", "complete", "release", "effects").
	Op string
	// Err is the backend's error.
	Err error
}

// Error implements error.
func (e *StoreError) Error() string {
	return fmt.Sprintf("idempotency: %s %s: store unavailable: %v", e.Backend, e.Op, e.Err)
}

// Unwrap returns the backend's error.
func (e *StoreError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrStoreUnavailable) true.
func (e *StoreError) Is(target error) bool { return target == ErrStoreUnavailable }

// Retryable reports true: the store may be back later.
func (e *StoreError) Retryable() bool { return true }

// Infrastructure marks the error as the fleet's own infrastructure failing
// (see tool.IsInfrastructure): it is never shown to the model.
func (e *StoreError) Infrastructure() bool { return true }

// InProgressError is returned by a wrapped tool when another live owner holds
// the key and the wait (Options.WaitTimeout) ran out, or the caller's
// context ended first (Err). It is retryable: retry after LeaseUntil at the
// latest.
type InProgressError struct {
	// Key is the idempotency key.
	Key string
	// Owner is the owner token holding the claim.
	Owner string
	// LeaseUntil is when the owner's lease ends unless it is renewed.
	LeaseUntil time.Time
	// Waited is how long the wrapper waited before giving up.
	Waited time.Duration
	// Err is the caller's context error when the context ended the wait
	// before WaitTimeout did (nil otherwise); Unwrap returns it, so
	// errors.Is(err, context.DeadlineExceeded) still holds. The error stays
	// an InProgressError, infrastructure and retryable: a deadline that
	// ends a wait for another worker's call is not a tool timeout the model
	// could retry (review finding: it reached the model as one).
	Err error
}

// Error implements error.
func (e *InProgressError) Error() string {
	msg := fmt.Sprintf("idempotency: %s is in progress by %s (lease until %s, waited %s)",
		e.Key, e.Owner, e.LeaseUntil.UTC().Format(time.RFC3339Nano), e.Waited.Round(time.Millisecond))
	if e.Err != nil {
		msg += ": wait ended: " + e.Err.Error()
	}
	return msg
}

// Unwrap returns Err.
func (e *InProgressError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrInProgress) true.
func (e *InProgressError) Is(target error) bool { return target == ErrInProgress }

// Retryable reports true: the owner finishes or its lease ends.
func (e *InProgressError) Retryable() bool { return true }

// Infrastructure marks the error as a coordination conflict of the fleet
// (see tool.IsInfrastructure): it is never shown to the model; the message
// is retried later.
func (e *InProgressError) Infrastructure() bool { return true }

// KeyFieldError reports a key field the tool declared but the arguments lack.
// It matches ErrMissingKeyField and tool.ErrInvalidArguments, so the agent
// loop may turn it into an error map the model can correct.
type KeyFieldError struct {
	// Tool is the tool name.
	Tool string
	// Field is the missing argument.
	Field string
}

// Error implements error.
func (e *KeyFieldError) Error() string {
	return fmt.Sprintf("idempotency: tool %s: key field %q is missing from the arguments", e.Tool, e.Field)
}

// Is makes errors.Is true for ErrMissingKeyField and tool.ErrInvalidArguments.
func (e *KeyFieldError) Is(target error) bool {
	return target == ErrMissingKeyField || target == tool.ErrInvalidArguments
}
