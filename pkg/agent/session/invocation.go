package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// DefaultInvocationRetention is how long invocation records are kept when a
// backend's configuration does not say: like idempotency records, longer
// than the JetStream duplicate window and as long as the DLQ's max age, so a
// completed invocation that arrives again (a late redelivery or a replay)
// is recognised.
const DefaultInvocationRetention = 14 * 24 * time.Hour

// InvocationStatus is where an invocation stands.
type InvocationStatus string

// The invocation statuses. Completed is final; the others may go back to
// running (a redelivery or a replay).
const (
	InvocationRunning      InvocationStatus = "running"
	InvocationCompleted    InvocationStatus = "completed"
	InvocationFailed       InvocationStatus = "failed"
	InvocationDeadLettered InvocationStatus = "dead_lettered"
)

// Valid reports whether s is one of the invocation statuses.
func (s InvocationStatus) Valid() bool {
	switch s {
	case InvocationRunning, InvocationCompleted, InvocationFailed, InvocationDeadLettered:
		return true
	}
	return false
}

// Terminal reports whether s ends an attempt (completed, failed,
// dead_lettered).
func (s InvocationStatus) Terminal() bool { return s.Valid() && s != InvocationRunning }

// ErrInvocationNotFound is returned by InvocationStore.Get for an id with no
// record (never seen, or past retention).
var ErrInvocationNotFound = errors.New("session: invocation not found")

// ErrInvocationCompleted is matched (errors.Is) by an
// *InvocationCompletedError: the invocation already completed, so the
// transition was not made.
var ErrInvocationCompleted = errors.New("session: invocation already completed")

// InvocationCompletedError is returned by InvocationStore.Transition for an
// invocation that is already completed. Current is the stored record, with
// the result to send again. It matches ErrInvocationCompleted.
type InvocationCompletedError struct {
	// Current is the stored, completed record.
	Current *Invocation
}

// Error implements error.
func (e *InvocationCompletedError) Error() string {
	return fmt.Sprintf("session: invocation %q already completed at %s", e.Current.ID,
		e.Current.FinishedAt.UTC().Format(time.RFC3339Nano))
}

// Is makes errors.Is(err, ErrInvocationCompleted) true.
func (e *InvocationCompletedError) Is(target error) bool { return target == ErrInvocationCompleted }

// Invocation is the status record of one invocation.
type Invocation struct {
	// ID is the invocation id (the request's Nats-Msg-Id).
	ID string `json:"id"`
	// Session is the invocation's session, if known.
	Session Key `json:"session,omitzero"`
	// Status is where the invocation stands.
	Status InvocationStatus `json:"status"`
	// Result is the result payload (JSON, stored compacted), typically the
	// result envelope published on AGENT_RESULTS.
	Result json.RawMessage `json:"result,omitempty"`
	// Error is a short, sanitised failure description.
	Error string `json:"error,omitempty"`
	// Attempts counts transitions into running; the store maintains it.
	Attempts int `json:"attempts"`
	// CreatedAt is when the record was first stored; the store sets it.
	CreatedAt time.Time `json:"created_at"`
	// UpdatedAt is when the record was last stored; the store sets it.
	UpdatedAt time.Time `json:"updated_at"`
	// FinishedAt is when the invocation last reached a terminal status; the
	// store sets it, and clears it when the invocation runs again.
	FinishedAt time.Time `json:"finished_at,omitzero"`
}

// InvocationStore keeps invocation status records for the configured
// retention. It makes a completed invocation a no-op when its id arrives
// again after the JetStream duplicate window: the worker calls Get before it
// runs anything. Implementations must be safe for concurrent use.
type InvocationStore interface {
	// Get returns the record or ErrInvocationNotFound.
	Get(ctx context.Context, id string) (*Invocation, error)
	// Transition stores rec atomically, creating the record if needed. A
	// completed record is final: Transition returns an
	// *InvocationCompletedError (errors.Is ErrInvocationCompleted) and stores
	// nothing. Otherwise the store keeps CreatedAt, sets UpdatedAt, adds one
	// to Attempts when rec.Status is running, sets FinishedAt for a terminal
	// status, and restarts the retention period; rec is updated with the
	// stored values. Transition returns only once the write is acknowledged.
	Transition(ctx context.Context, rec *Invocation) error
}

// PrepareTransition validates rec and compacts rec.Result in place. Backends
// call it first in Transition.
func PrepareTransition(rec *Invocation) error {
	if rec == nil || rec.ID == "" {
		return errors.New("session: invocation record needs an id")
	}
	if !rec.Status.Valid() {
		return fmt.Errorf("session: invocation %q: invalid status %q", rec.ID, rec.Status)
	}
	if len(rec.Result) > 0 {
		var buf bytes.Buffer
		if err := json.Compact(&buf, rec.Result); err != nil {
			return fmt.Errorf("session: invocation %q: result is not JSON: %w", rec.ID, err)
		}
		rec.Result = buf.Bytes()
	}
	return nil
}

// ApplyTransition computes the record to store when rec is stored over prev
// (nil if there is none) at now: it returns an *InvocationCompletedError if
// prev is completed. Backends that store the whole record use it.
func ApplyTransition(prev, rec *Invocation, now time.Time) (*Invocation, error) {
	if prev != nil && prev.Status == InvocationCompleted {
		return nil, &InvocationCompletedError{Current: prev}
	}
	out := *rec
	out.UpdatedAt = now
	out.CreatedAt = now
	out.Attempts = 0
	out.FinishedAt = time.Time{}
	if prev != nil {
		out.CreatedAt = prev.CreatedAt
		out.Attempts = prev.Attempts
		out.FinishedAt = prev.FinishedAt
	}
	switch {
	case rec.Status == InvocationRunning:
		out.Attempts++
		out.FinishedAt = time.Time{}
	case rec.Status.Terminal():
		out.FinishedAt = now
	}
	return &out, nil
}
