package idempotency

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// State is the state of a stored record.
type State string

const (
	// StateInProgress: an owner claimed the key and holds a lease.
	StateInProgress State = "in_progress"
	// StateCompleted: the call finished and its result is stored.
	StateCompleted State = "completed"
)

// Outcome is what Claim found.
type Outcome string

const (
	// OutcomeAcquired: the key was new; the caller now owns it.
	OutcomeAcquired Outcome = "acquired"
	// OutcomeReclaimed: the key was in progress with an expired lease; the
	// caller took it over (the previous owner may have run the tool).
	OutcomeReclaimed Outcome = "reclaimed"
	// OutcomeCompleted: the call already completed; Claim.Record.Result holds
	// the stored result and the tool must not run.
	OutcomeCompleted Outcome = "completed"
	// OutcomeInProgress: another owner holds a live lease
	// (Claim.Record.Owner, Claim.Record.LeaseUntil).
	OutcomeInProgress Outcome = "in_progress"
)

// Owns reports whether the claimer now owns the key (acquired or reclaimed).
func (o Outcome) Owns() bool { return o == OutcomeAcquired || o == OutcomeReclaimed }

// Ticket names one claim: the key, the invocation it belongs to (for the
// per-invocation index) and the owner token that fences every write.
type Ticket struct {
	// Key is the full key (Key.String()).
	Key string
	// InvocationID is the invocation the call belongs to.
	InvocationID string
	// Owner is the claimer's token, unique per claim attempt.
	Owner string
}

// Validate reports an empty field.
func (t Ticket) Validate() error {
	if t.Key == "" || t.InvocationID == "" || t.Owner == "" {
		return fmt.Errorf("idempotency: ticket needs a key, an invocation id and an owner: %+v", t)
	}
	return nil
}

// ClaimRequest asks a Store to claim a key.
type ClaimRequest struct {
	Ticket
	// Agent is the agent name, recorded for inspection.
	Agent string
	// Tool is the tool name, recorded for inspection.
	Tool string
	// ArgsHash is the hash of the full arguments (ArgsHash), recorded.
	ArgsHash string
	// Lease is how long the claim holds without Renew. Must be > 0.
	Lease time.Duration
}

// Validate reports a request a Store must refuse.
func (r ClaimRequest) Validate() error {
	if err := r.Ticket.Validate(); err != nil {
		return err
	}
	if r.Lease <= 0 {
		return fmt.Errorf("idempotency: claim %s: lease must be > 0", r.Key)
	}
	return nil
}

// Claim is the answer to a claim.
type Claim struct {
	// Outcome is what the store found.
	Outcome Outcome
	// Record is the record after the claim: ours (acquired, reclaimed), the
	// completed one with its result, or the live owner's.
	Record Record
}

// Record is what a store holds for one key, as shown to on-call by Effects.
type Record struct {
	// Key is the full key.
	Key string `json:"key"`
	// InvocationID is the invocation the call belongs to.
	InvocationID string `json:"invocation_id"`
	// Agent is the agent name.
	Agent string `json:"agent"`
	// Tool is the tool name.
	Tool string `json:"tool"`
	// State is in progress or completed.
	State State `json:"state"`
	// Owner is the owner token of the last claim.
	Owner string `json:"owner"`
	// LeaseUntil is when an in-progress claim's lease ends.
	LeaseUntil time.Time `json:"lease_until"`
	// ArgsHash is the hash of the full arguments of the last claim.
	ArgsHash string `json:"args_hash"`
	// Result is the stored result (JSON), completed records only.
	Result json.RawMessage `json:"result,omitempty"`
	// Attempts counts claims that owned the key (acquired + reclaimed).
	Attempts int `json:"attempts"`
	// CreatedAt is when the key was first claimed.
	CreatedAt time.Time `json:"created_at"`
	// CompletedAt is when it completed (zero while in progress).
	CompletedAt time.Time `json:"completed_at,omitzero"`
}

// Store records claims and results. Implementations are safe for concurrent
// use; every method blocks on the backend and honours ctx. Errors that are
// not about the claim's state are *StoreError (ErrStoreUnavailable).
type Store interface {
	// Claim atomically claims req.Key: new → in progress (OutcomeAcquired);
	// completed → the stored record (OutcomeCompleted); in progress with a
	// live lease → the owner and lease end (OutcomeInProgress); in progress
	// with an expired lease → taken over (OutcomeReclaimed).
	Claim(ctx context.Context, req ClaimRequest) (Claim, error)
	// Renew extends t's lease to now+lease and returns the new lease end.
	// ErrNotOwner if another owner holds the key or it completed;
	// ErrLeaseLost if the record is gone.
	Renew(ctx context.Context, t Ticket, lease time.Duration) (time.Time, error)
	// Complete stores result (JSON) and keeps the record for retention.
	// Fenced: ErrNotOwner if another owner holds the key, ErrLeaseLost if
	// the record is gone. Completing twice with the same owner is a no-op.
	// An owner whose lease expired but was not taken over may still
	// complete. A record the backend can never hold (too large) is an
	// error matching ErrResultTooLarge, with nothing written.
	Complete(ctx context.Context, t Ticket, result json.RawMessage, retention time.Duration) error
	// Release deletes t's in-progress claim so the next claim runs the tool.
	// Fenced like Complete; a completed record is never released
	// (ErrNotOwner).
	Release(ctx context.Context, t Ticket) error
	// Effects lists the records (in progress and completed) of one
	// invocation, oldest first, from a per-invocation index (never a key
	// scan). Released and expired records are not listed.
	Effects(ctx context.Context, invocationID string) ([]Record, error)
}

// IsOwnershipError reports whether err says the caller no longer owns a claim
// (ErrNotOwner or ErrLeaseLost).
func IsOwnershipError(err error) bool {
	return errors.Is(err, ErrNotOwner) || errors.Is(err, ErrLeaseLost)
}
