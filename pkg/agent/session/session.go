package session

import (
	"context"
	"errors"
	"fmt"
	"maps"
)

// ErrNotFound is returned by Service.Get for a session that does not exist.
var ErrNotFound = errors.New("session: not found")

// Key names a session. App is the agent (application) name.
type Key struct {
	App       string `json:"app"`        // App is the agent (application) name.
	UserID    string `json:"user_id"`    // UserID identifies the user.
	SessionID string `json:"session_id"` // SessionID identifies the session within the user's sessions.
}

// Validate reports a key with an empty field.
func (k Key) Validate() error {
	if k.App == "" || k.UserID == "" || k.SessionID == "" {
		return errors.New("session: key needs app, user id and session id")
	}
	return nil
}

// Session is a snapshot of a session: its state and its events in append
// order.
type Session struct {
	Key    Key            `json:"key"`    // Key names the session.
	State  map[string]any `json:"state"`  // State is the session state, built from the events' state deltas.
	Events []*Event       `json:"events"` // Events are the session's events in append order.
}

// InvocationEvents returns the events of one invocation, in order.
func (s *Session) InvocationEvents(invocationID string) []*Event {
	var out []*Event
	for _, e := range s.Events {
		if e.InvocationID == invocationID {
			out = append(out, e)
		}
	}
	return out
}

// Service stores sessions. Implementations must be safe for concurrent use
// and keep events in the order AppendEvent returned for them. A store that
// keeps events and state as JSON decodes them with DecodeEvent and
// DecodeJSON: numbers read back are json.Numbers with their digits (but
// function-call arguments, float64 as the model adapters give them).
type Service interface {
	// GetOrCreate returns the session, creating it empty if it does not exist.
	GetOrCreate(ctx context.Context, key Key) (*Session, error)
	// Get returns the session or ErrNotFound.
	Get(ctx context.Context, key Key) (*Session, error)
	// AppendEvent stores ev at the end of the session's events and merges its
	// StateDelta into the state. It assigns ev.ID and ev.Timestamp when they
	// are empty. Partial events are rejected with ErrPartialEvent. It returns
	// only after the store acknowledged the write: the agent loop relies on
	// it so that the model response asking for a tool is durable before the
	// tool runs.
	AppendEvent(ctx context.Context, key Key, ev *Event) error
}

// ErrPartialEvent is returned when a partial (streaming) event is appended.
var ErrPartialEvent = errors.New("session: partial events are not stored")

// ErrSessionTooLarge matches (errors.Is) the error of an append a store
// refused because the session with the new events would exceed the size
// it can hold for one session (natssession: one KV entry); nothing is
// stored. It is permanent: a session only grows, so every later append to
// it fails the same way until the session is removed or the store's limit
// raised. It is not an outage, and retrying does not help. A store that
// refuses a size returns a *TooLargeError (wrapped), which matches it.
var ErrSessionTooLarge = errors.New("session: session exceeds its store's size limit")

// TooLargeError is the error (wrapped) of an append a store refused as too
// large for one session. It matches ErrSessionTooLarge with errors.Is.
type TooLargeError struct {
	// Size is the session's encoded size with the new events, in bytes.
	Size int
	// Limit is the store's limit in bytes, or 0 when the store's server
	// refused the write without saying its limit (then Err says why).
	Limit int
	// Err is the store's own refusal, if any.
	Err error
}

// Error implements error.
func (e *TooLargeError) Error() string {
	msg := fmt.Sprintf("session: %d bytes exceed its store's size limit", e.Size)
	if e.Limit > 0 {
		msg += fmt.Sprintf(" of %d bytes", e.Limit)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is reports whether target is ErrSessionTooLarge.
func (e *TooLargeError) Is(target error) bool { return target == ErrSessionTooLarge }

// Unwrap returns the store's own refusal (nil if none).
func (e *TooLargeError) Unwrap() error { return e.Err }

// ApplyDelta merges delta into state: nil values delete keys.
func ApplyDelta(state, delta map[string]any) {
	for k, v := range delta {
		if v == nil {
			delete(state, k)
			continue
		}
		state[k] = v
	}
}

// CloneState returns a shallow copy of state (never nil).
func CloneState(state map[string]any) map[string]any {
	out := make(map[string]any, len(state))
	maps.Copy(out, state)
	return out
}
