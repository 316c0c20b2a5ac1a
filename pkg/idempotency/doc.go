// Package idempotency makes effectful tools safe to run again: a tool call is
// identified by a key derived from the invocation id, the tool name and the
// canonical JSON of its arguments, and a Store records, per key, that the
// call is in progress (an owner token and a lease) or completed (its result).
//
// The flow of one wrapped tool call (see Wrap):
//
//	derive key ─▶ Claim ─┬─ acquired / reclaimed ─▶ run the tool (lease renewed) ─┬─ final result ─▶ Complete
//	                     │                                                       ├─ retryable map, ErrNotApplied, invalid arguments ─▶ Release
//	                     │                                                       └─ any other Go error or a panic ─▶ Complete(outcome_unknown)
//	                     ├─ completed ─▶ return the stored result (a replay), the tool does not run
//	                     └─ in progress by a live owner ─▶ wait (bounded, backoff), then *InProgressError
//
// A tool that fails with a Go error may have done its effect first (a
// refund sent, its reply lost): the record says the outcome is unknown, and
// a retry answers from it instead of running the tool again. Only a tool
// that says it did nothing (an error matching ErrNotApplied) is released.
//
// The store is the only source of truth: if it cannot be reached the tool does
// not run (fail closed) and the error matches ErrStoreUnavailable, so the
// worker can put the message back with a delay.
//
// Keys: "<prefix>:<agent>:<tool>:<hex sha256>" (see DeriveKey for the exact
// hash input). A tool may name key fields so that free-text arguments (a
// refund's reason) do not take part in the key; a hash of the full arguments
// is stored next to the result and a replay whose full arguments differ is
// reported (metric and log) but still replayed: that is what key fields are
// for.
//
// Backends: Memory (this package, tests and demos), redisstore (Redis, one Lua
// round trip per claim) and natskv (NATS JetStream KV, works on server 2.9).
// Package idempotencytest is the conformance suite every backend runs.
//
// Retention of completed records must outlive the dead-letter stream's max
// age, otherwise a replay from the DLQ repeats effects; see ValidateRetention.
package idempotency
