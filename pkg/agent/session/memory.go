package session

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Memory is an in-process Service for tests and the demo. Its zero value is
// not usable; call NewMemory.
type Memory struct {
	mu       sync.Mutex
	sessions map[Key]*Session
	now      func() time.Time
}

// NewMemory returns an empty in-memory session service.
func NewMemory() *Memory {
	return &Memory{sessions: map[Key]*Session{}, now: time.Now}
}

// GetOrCreate implements Service.
func (m *Memory) GetOrCreate(ctx context.Context, key Key) (*Session, error) {
	if err := key.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[key]
	if !ok {
		s = &Session{Key: key, State: map[string]any{}}
		m.sessions[key] = s
	}
	return snapshot(s), nil
}

// Get implements Service.
func (m *Memory) Get(ctx context.Context, key Key) (*Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[key]
	if !ok {
		return nil, ErrNotFound
	}
	return snapshot(s), nil
}

// AppendEvent implements Service.
func (m *Memory) AppendEvent(ctx context.Context, key Key, ev *Event) error {
	return m.AppendEvents(ctx, key, []*Event{ev})
}

var _ BatchAppender = (*Memory)(nil)

// AppendEvents implements BatchAppender: all of evs under one lock.
func (m *Memory) AppendEvents(ctx context.Context, key Key, evs []*Event) error {
	if err := key.Validate(); err != nil {
		return err
	}
	for _, ev := range evs {
		if ev.Partial {
			return ErrPartialEvent
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, ev := range evs {
		Stamp(ev, m.now)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[key]
	if !ok {
		s = &Session{Key: key, State: map[string]any{}}
		m.sessions[key] = s
	}
	for _, ev := range evs {
		cp := *ev
		s.Events = append(s.Events, &cp)
		ApplyDelta(s.State, ev.Actions.StateDelta)
	}
	return nil
}

// Stamp assigns ev an ID and a timestamp if it has none. Backends call it
// before storing an event.
func Stamp(ev *Event, now func() time.Time) {
	if ev.ID == "" {
		ev.ID = uuid.Must(uuid.NewV7()).String()
	}
	if ev.Timestamp.IsZero() {
		ev.Timestamp = now().UTC()
	}
}

func snapshot(s *Session) *Session {
	out := &Session{Key: s.Key, State: CloneState(s.State), Events: make([]*Event, len(s.Events))}
	copy(out.Events, s.Events)
	return out
}
