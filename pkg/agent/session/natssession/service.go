package natssession

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/kvbucket"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// ErrSessionTooLarge matches (errors.Is) the error of an AppendEvent whose
// session with the new event would no longer fit in one KV entry; nothing
// is stored. It is session.ErrSessionTooLarge, so callers need not import
// this package to recognise it; the error is a *session.TooLargeError
// (wrapped) with the size and the limit.
var ErrSessionTooLarge = session.ErrSessionTooLarge

// headerSlack is room left in max_payload (and the bucket's MaxValueSize)
// for the message headers.
const headerSlack = 1024

// jsMessageTooLarge is JetStream's error code for "message size exceeds
// maximum allowed" (nats.go names no constant for it).
const jsMessageTooLarge jetstream.ErrorCode = 10054

// Service is a session.Service on a NATS KV bucket: one entry per session
// holding its state and events, changed by revision-checked updates (see the
// package documentation for the trade-off). It is safe for concurrent use.
type Service struct {
	kv  jetstream.KeyValue
	nc  *nats.Conn
	cfg Config
	// bucketMax is the bucket's value limit less the headers' room (0: the
	// bucket sets none); the connection's max_payload is read at each
	// append (limit).
	bucketMax int
	now       func() time.Time
}

var _ session.Service = (*Service)(nil)

// sessionDoc is a session's KV value.
type sessionDoc struct {
	CreatedAt time.Time         `json:"created_at"`
	State     map[string]any    `json:"state"`
	Events    []json.RawMessage `json:"events"`
}

// NewService opens the session bucket on js (creating or updating it unless
// cfg.OpenExisting). cfg gets its defaults and is validated.
func NewService(ctx context.Context, js jetstream.JetStream, cfg Config) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	kv, _, err := openBucket(ctx, js, cfg, cfg.SessionBucket, "agentfleet sessions: state and events per session", cfg.SessionTTL, cfg.MaxValueSize, kvbucket.Configure)
	if err != nil {
		return nil, err
	}
	s := &Service{kv: kv, nc: js.Conn(), cfg: cfg, now: time.Now}
	if cfg.MaxValueSize > 0 {
		// The server checks the value with the KV update's headers
		// against the bucket's limit too: the same room is left.
		s.bucketMax = int(cfg.MaxValueSize) - headerSlack
	}
	return s, nil
}

// limit is the largest session value an append sends: the connection's
// max_payload as it is now (a reconnect to a server with a smaller one
// lowers it) and the bucket's limit, each less the headers' room.
func (s *Service) limit() int {
	l := int(s.nc.MaxPayload()) - headerSlack
	if s.bucketMax > 0 {
		l = min(l, s.bucketMax)
	}
	return l
}

// GetOrCreate implements session.Service.
func (s *Service) GetOrCreate(ctx context.Context, key session.Key) (*session.Session, error) {
	if err := key.Validate(); err != nil {
		return nil, err
	}
	k, err := sessionKey(key)
	if err != nil {
		return nil, err
	}
	for n := range s.cfg.MaxConflictRetries {
		doc, _, err := s.load(ctx, k)
		if err == nil {
			return doc.session(key)
		}
		if !errors.Is(err, session.ErrNotFound) {
			return nil, fmt.Errorf("natssession: get or create %v: %w", key, err)
		}
		data, err := json.Marshal(&sessionDoc{CreatedAt: s.now().UTC(), State: map[string]any{}, Events: []json.RawMessage{}})
		if err != nil {
			return nil, err
		}
		_, err = s.kv.Create(ctx, k, data)
		if err == nil {
			return &session.Session{Key: key, State: map[string]any{}, Events: []*session.Event{}}, nil
		}
		if !isConflict(err) {
			return nil, fmt.Errorf("natssession: create %v: %w", key, err)
		}
		if err := backoff(ctx, n); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("natssession: get or create %v: %w", key, ErrTooManyConflicts)
}

// Get implements session.Service. It is one direct get.
func (s *Service) Get(ctx context.Context, key session.Key) (*session.Session, error) {
	if err := key.Validate(); err != nil {
		return nil, err
	}
	k, err := sessionKey(key)
	if err != nil {
		return nil, err
	}
	doc, _, err := s.load(ctx, k)
	if errors.Is(err, session.ErrNotFound) {
		return nil, session.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("natssession: get %v: %w", key, err)
	}
	return doc.session(key)
}

// AppendEvent implements session.Service. It rewrites the session's entry
// with Update at the revision it read, retrying on conflict, and returns
// only after JetStream acknowledged the write (the PubAck: stored by the
// stream), so an event it returned nil for (for example the model response
// that asks for a tool) is durable before the caller runs the tool.
func (s *Service) AppendEvent(ctx context.Context, key session.Key, ev *session.Event) error {
	if err := key.Validate(); err != nil {
		return err
	}
	k, err := sessionKey(key)
	if err != nil {
		return err
	}
	if ev.Partial {
		return session.ErrPartialEvent
	}
	session.Stamp(ev, s.now)
	raw, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("natssession: encode event %s: %w", ev.ID, err)
	}
	for n := range s.cfg.MaxConflictRetries {
		doc, rev, err := s.load(ctx, k)
		switch {
		case errors.Is(err, session.ErrNotFound):
			doc = &sessionDoc{CreatedAt: ev.Timestamp.UTC(), State: map[string]any{}}
		case err != nil:
			return fmt.Errorf("natssession: append to %v: %w", key, err)
		}
		doc.Events = append(doc.Events, raw)
		session.ApplyDelta(doc.State, ev.Actions.StateDelta)
		data, err := json.Marshal(doc)
		if err != nil {
			return fmt.Errorf("natssession: encode session %v: %w", key, err)
		}
		if limit := s.limit(); len(data) > limit {
			return fmt.Errorf("natssession: append event %s to %v (one KV entry per session): %w",
				ev.ID, key, &session.TooLargeError{Size: len(data), Limit: limit})
		}
		if rev == 0 {
			_, err = s.kv.Create(ctx, k, data)
		} else {
			_, err = s.kv.Update(ctx, k, data, rev)
		}
		if err == nil {
			return nil
		}
		if apiErr := (*jetstream.APIError)(nil); (errors.As(err, &apiErr) && apiErr.ErrorCode == jsMessageTooLarge) ||
			errors.Is(err, nats.ErrMaxPayload) {
			// The server's own size check (its headers, or a limit lowered
			// since the service opened), or the client's against a
			// max_payload lowered by a reconnect between our check and
			// the send: the same answer as ours.
			return fmt.Errorf("natssession: append event %s to %v (one KV entry per session): %w",
				ev.ID, key, &session.TooLargeError{Size: len(data), Err: err})
		}
		if !isConflict(err) {
			return fmt.Errorf("natssession: append event %s to %v: %w", ev.ID, key, err)
		}
		if err := backoff(ctx, n); err != nil {
			return fmt.Errorf("natssession: append event %s to %v: %w", ev.ID, key, err)
		}
	}
	return fmt.Errorf("natssession: append event %s to %v: %w", ev.ID, key, ErrTooManyConflicts)
}

// load reads and decodes a session entry; revision 0 means none exists
// (session.ErrNotFound).
func (s *Service) load(ctx context.Context, k string) (*sessionDoc, uint64, error) {
	e, err := s.kv.Get(ctx, k)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, session.ErrNotFound
	}
	if err != nil {
		return nil, 0, err
	}
	doc := new(sessionDoc)
	if err := session.DecodeJSON(e.Value(), doc); err != nil {
		return nil, 0, fmt.Errorf("decode session entry %s: %w", k, err)
	}
	if doc.State == nil {
		doc.State = map[string]any{}
	}
	return doc, e.Revision(), nil
}

func (d *sessionDoc) session(key session.Key) (*session.Session, error) {
	out := &session.Session{Key: key, State: d.State, Events: make([]*session.Event, 0, len(d.Events))}
	for i, raw := range d.Events {
		ev := new(session.Event)
		if err := session.DecodeEvent(raw, ev); err != nil {
			return nil, fmt.Errorf("natssession: decode event %d of %v: %w", i, key, err)
		}
		out.Events = append(out.Events, ev)
	}
	return out, nil
}
