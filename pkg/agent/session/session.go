package session

import (
	"context"
	"errors"
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
// and keep events in the order AppendEvent returned for them.
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
