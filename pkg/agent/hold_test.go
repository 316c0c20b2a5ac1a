package agent_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// writeLog is a session service (memory underneath) that notes each write's
// events and can fail the next writes.
type writeLog struct {
	*session.Memory
	mu     sync.Mutex
	writes []string // the authors of each write's events
	fail   int      // writes to refuse before storing again
}

func (w *writeLog) note(evs []*session.Event) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fail > 0 {
		w.fail--
		return errors.New("store down")
	}
	var authors []string
	for _, e := range evs {
		authors = append(authors, e.Author)
	}
	w.writes = append(w.writes, fmt.Sprint(authors))
	return nil
}

func (w *writeLog) AppendEvent(ctx context.Context, key session.Key, ev *session.Event) error {
	if err := w.note([]*session.Event{ev}); err != nil {
		return err
	}
	return w.Memory.AppendEvent(ctx, key, ev)
}

func (w *writeLog) AppendEvents(ctx context.Context, key session.Key, evs []*session.Event) error {
	if err := w.note(evs); err != nil {
		return err
	}
	return w.Memory.AppendEvents(ctx, key, evs)
}

func (w *writeLog) log() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprint(w.writes)
}

func withWriteLog(f *fixture) *writeLog {
	w := &writeLog{Memory: f.sessions}
	f.runner.Sessions = w
	return w
}

// The user message is stored in one write with the first model response
// (the request still carries it until then); every later event is a write
// of its own, so a model response asking for a tool is durable before the
// tool runs.
func TestUserMessageGoesWithTheFirstModelResponse(t *testing.T) {
	f := newFixture(t, agenttest.Reply(getOrder("A-1042")), agenttest.Reply(agenttest.Text("It shipped.")))
	w := withWriteLog(f)
	if _, err := f.run(t, "inv-1", "Where is A-1042?"); err != nil {
		t.Fatal(err)
	}
	if got, want := w.log(), "[[user support] [support] [support]]"; got != want {
		t.Fatalf("writes = %s, want %s", got, want)
	}
	s := f.session(t)
	if len(s.Events) != 4 || s.Events[0].Author != session.AuthorUser || s.Events[0].Timestamp.After(s.Events[1].Timestamp) {
		t.Fatalf("session = %d events, first %+v", len(s.Events), s.Events[0])
	}
}

// When the invocation ends before any model response is stored (the model
// fails), the held user message is still stored, once.
func TestHeldUserMessageStoredWhenTheModelFails(t *testing.T) {
	f := newFixture(t, agenttest.Fail(errors.New("bad request")))
	w := withWriteLog(f)
	if _, err := f.run(t, "inv-1", "hello"); err == nil {
		t.Fatal("the model failure did not end the invocation")
	}
	if got := w.log(); got != "[[user]]" {
		t.Fatalf("writes = %s, want the user message alone", got)
	}
	if s := f.session(t); len(s.Events) != 1 || s.Events[0].Content.Text() != "hello" {
		t.Fatalf("session = %+v", s.Events)
	}
}

// If the write of the user message and the first model response fails (the
// store is down), neither is stored and the invocation ends with a
// *SessionError; the redelivery starts afresh from the request and the
// session holds the user message once.
func TestFailedFirstWriteLosesNothing(t *testing.T) {
	f := newFixture(t, agenttest.Reply(agenttest.Text("Hi!")), agenttest.Reply(agenttest.Text("Hi again!")))
	w := withWriteLog(f)
	w.fail = 2 // the first write and the flush after it
	_, err := f.run(t, "inv-1", "hello")
	var se *agent.SessionError
	if !errors.As(err, &se) {
		t.Fatalf("error = %v, want a *SessionError", err)
	}
	if _, err := f.sessions.Get(context.Background(), session.Key{App: "support", UserID: "u1", SessionID: "s1"}); !errors.Is(err, session.ErrNotFound) {
		if s := f.session(t); len(s.Events) != 0 {
			t.Fatalf("events stored by a failed write: %+v", s.Events)
		}
	}
	if _, err := f.run(t, "inv-1", "hello"); err != nil {
		t.Fatal(err)
	}
	s := f.session(t)
	if len(s.Events) != 2 || s.Events[0].Author != session.AuthorUser || s.Events[1].Content.Text() != "Hi again!" {
		t.Fatalf("session after the redelivery = %d events", len(s.Events))
	}
}

// loadCount counts GetOrCreate calls.
type loadCount struct {
	*session.Memory
	loads int
}

func (l *loadCount) GetOrCreate(ctx context.Context, key session.Key) (*session.Session, error) {
	l.loads++
	return l.Memory.GetOrCreate(ctx, key)
}

// RunRequest.Session (what the worker's Gate read under the session lock)
// replaces the runner's own load, but only for the invocation's own key:
// the resume then works from it.
func TestRunRequestSessionReplacesTheLoad(t *testing.T) {
	f := newFixture(t, agenttest.Reply(agenttest.Text("one")), agenttest.Reply(agenttest.Text("two")))
	lc := &loadCount{Memory: f.sessions}
	f.runner.Sessions = lc
	ctx := context.Background()
	key := session.Key{App: "support", UserID: "u1", SessionID: "s1"}
	snap, err := f.sessions.GetOrCreate(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	run := func(id string, s *session.Session) {
		t.Helper()
		if _, err := f.runner.Invoke(ctx, agent.RunRequest{InvocationID: id, UserID: "u1", SessionID: "s1",
			Message: agenttest.Text("hi").Content, Session: s}); err != nil {
			t.Fatal(err)
		}
	}
	run("inv-1", snap)
	if lc.loads != 0 {
		t.Fatalf("the runner loaded the session %d times although it was given", lc.loads)
	}
	other := &session.Session{Key: session.Key{App: "support", UserID: "u9", SessionID: "s9"}, State: map[string]any{}}
	run("inv-2", other)
	if lc.loads != 1 {
		t.Fatalf("a snapshot of another session was used (%d loads, want 1)", lc.loads)
	}
	// inv-2's model request saw inv-1's turn: it came from the load.
	reqs := f.model.Requests()
	if n := len(reqs[1].Contents); n != 3 {
		t.Fatalf("second request has %d contents, want inv-1's two and the new message", n)
	}
}
