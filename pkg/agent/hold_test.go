package agent_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
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
	lost   int      // writes to store whose reply is then lost (an error)
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
	if err := w.Memory.AppendEvent(ctx, key, ev); err != nil {
		return err
	}
	return w.replyLost()
}

func (w *writeLog) AppendEvents(ctx context.Context, key session.Key, evs []*session.Event) error {
	if err := w.note(evs); err != nil {
		return err
	}
	if err := w.Memory.AppendEvents(ctx, key, evs); err != nil {
		return err
	}
	return w.replyLost()
}

func (w *writeLog) replyLost() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lost > 0 {
		w.lost--
		return errors.New("i/o timeout (stored)")
	}
	return nil
}

// oneByOne hides AppendEvents: a Service without batches (like NATS KV).
type oneByOne struct{ session.Service }

// authors lists a session's events as author:text.
func authors(s *session.Session) string {
	var out []string
	for _, e := range s.Events {
		out = append(out, e.Author+":"+e.Content.Text())
	}
	return fmt.Sprint(out)
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
// (the request still carries it until then), and a tool step's function
// responses in one write with the next model response; a model response
// asking for a tool is stored before the tool runs.
func TestHeldEventsGoWithTheNextModelResponse(t *testing.T) {
	f := newFixture(t, agenttest.Reply(getOrder("A-1042")), agenttest.Reply(agenttest.Text("It shipped.")))
	w := withWriteLog(f)
	stored := storedAtRun(t, f)
	if _, err := f.run(t, "inv-1", "Where is A-1042?"); err != nil {
		t.Fatal(err)
	}
	if got, want := w.log(), "[[user support] [support support]]"; got != want {
		t.Fatalf("writes = %s, want %s", got, want)
	}
	if got, want := *stored, "[user:Where is A-1042? support:]"; got != want {
		t.Fatalf("session when the tool ran = %s, want %s (the call stored first)", got, want)
	}
	s := f.session(t)
	if len(s.Events) != 4 || s.Events[0].Author != session.AuthorUser || s.Events[0].Timestamp.After(s.Events[1].Timestamp) {
		t.Fatalf("session = %d events, first %+v", len(s.Events), s.Events[0])
	}
	if len(s.Events[2].FunctionResponses()) != 1 || s.Events[2].Timestamp.After(s.Events[3].Timestamp) {
		t.Fatalf("third event = %+v, want the function response, stamped before the answer", s.Events[2])
	}
}

// storedAtRun replaces get_order with a tool that notes what the session
// holds when it runs (see authors) and then answers like get_order.
func storedAtRun(t *testing.T, f *fixture) *string {
	t.Helper()
	var seen string
	orig := f.agent.Tools[0]
	f.agent.Tools[0] = failingTool{name: orig.Name(), run: func(ctx context.Context, args map[string]any) (map[string]any, error) {
		seen = authors(f.session(t))
		return orig.Run(ctx, args)
	}}
	return &seen
}

// A caller that asks for streaming sees each function response before the
// next model call's output, so it is stored (and yielded) on its own.
func TestStreamingStoresFunctionResponsesAtOnce(t *testing.T) {
	f := newFixture(t, agenttest.Reply(getOrder("A-1042")), agenttest.Reply(agenttest.Partial("It "), agenttest.Text("It shipped.")))
	w := withWriteLog(f)
	var kinds []string
	for ev, err := range f.ask(true) {
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, eventKind(ev))
	}
	if got, want := w.log(), "[[user support] [support] [support]]"; got != want {
		t.Fatalf("writes = %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(kinds), "[call response partial answer]"; got != want {
		t.Fatalf("yields = %s, want %s", got, want)
	}
}

func eventKind(ev *session.Event) string {
	switch {
	case ev.Author == session.AuthorUser:
		return "user"
	case ev.Partial:
		return "partial"
	case len(ev.FunctionCalls()) > 0:
		return "call"
	case len(ev.FunctionResponses()) > 0:
		return "response"
	}
	return "answer"
}

// Held function responses are yielded in order, after the write that
// stored them and before the model response stored with them; each yielded
// event is in the store when the caller sees it.
func TestHeldResponsesAreYieldedOnceStored(t *testing.T) {
	f := newFixture(t, agenttest.Reply(getOrder("A-1042")), agenttest.Reply(agenttest.Text("It shipped.")))
	var kinds []string
	for ev, err := range f.ask(false) {
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, eventKind(ev))
		s := f.session(t)
		if last := s.Events[len(s.Events)-1]; last.ID != ev.ID && !containsID(s, ev.ID) {
			t.Fatalf("%s event %s yielded before it was stored", eventKind(ev), ev.ID)
		}
	}
	if got, want := fmt.Sprint(kinds), "[call response answer]"; got != want {
		t.Fatalf("yields = %s, want %s", got, want)
	}
}

func containsID(s *session.Session, id string) bool {
	for _, e := range s.Events {
		if e.ID == id {
			return true
		}
	}
	return false
}

// When the model fails after a tool ran, the held function response is
// still stored (by the flush) and yielded before the error: what the tools
// did is in the session for the resume, which runs nothing again.
func TestHeldResponseStoredWhenTheNextModelCallFails(t *testing.T) {
	f := newFixture(t, agenttest.Reply(getOrder("A-1042")), agenttest.Fail(errors.New("bad request")), agenttest.Reply(agenttest.Text("It shipped.")))
	w := withWriteLog(f)
	runs := countRuns(f)
	events, err := f.run(t, "inv-1", "Where is A-1042?")
	var me *agent.ModelError
	if !errors.As(err, &me) {
		t.Fatalf("error = %v, want the *ModelError", err)
	}
	if len(events) != 2 || eventKind(events[1]) != "response" {
		t.Fatalf("yielded %d events before the error, want the call and the response", len(events))
	}
	if got, want := w.log(), "[[user support] [support]]"; got != want {
		t.Fatalf("writes = %s, want %s", got, want)
	}
	if _, err := f.run(t, "inv-1", "Where is A-1042?"); err != nil {
		t.Fatal(err)
	}
	if *runs != 1 {
		t.Fatalf("get_order ran %d times, want once (its stored response reused)", *runs)
	}
}

// A crash (here: the write of the function response with the next model
// response fails, as if the worker died before it) leaves the call without
// a response; the redelivery runs the tool again and the session ends in
// order. An effectful tool is safe here through its idempotency key
// (pkg/idempotency), whose stored result the second run returns.
func TestResumeRunsAToolWhoseHeldResponseWasLost(t *testing.T) {
	f := newFixture(t, agenttest.Reply(getOrder("A-1042")), agenttest.Reply(agenttest.Text("It shipped.")), agenttest.Reply(agenttest.Text("It shipped!")))
	w := withWriteLog(f)
	runs := countRuns(f)
	first := true
	f.runner.Sessions = &failNth{Service: w, n: 2, fail: &first}
	var se *agent.SessionError
	if _, err := f.run(t, "inv-1", "Where is A-1042?"); !errors.As(err, &se) {
		t.Fatalf("error = %v, want a *SessionError", err)
	}
	if got := authors(f.session(t)); got != "[user:Where is A-1042? support:]" {
		t.Fatalf("session after the failed write = %s", got)
	}
	if _, err := f.run(t, "inv-1", "Where is A-1042?"); err != nil {
		t.Fatal(err)
	}
	if *runs != 2 {
		t.Fatalf("get_order ran %d times, want twice (its response was never stored)", *runs)
	}
	s := f.session(t)
	var kinds []string
	for _, e := range s.Events {
		kinds = append(kinds, eventKind(e))
	}
	if got, want := fmt.Sprint(kinds), "[user call response answer]"; got != want {
		t.Fatalf("session = %s, want %s (the user message, then the turn in order)", got, want)
	}
}

// failNth fails the n-th write, once (fail is cleared).
type failNth struct {
	session.Service
	n, seen int
	fail    *bool
}

func (f *failNth) AppendEvent(ctx context.Context, key session.Key, ev *session.Event) error {
	return f.AppendEvents(ctx, key, []*session.Event{ev})
}

func (f *failNth) AppendEvents(ctx context.Context, key session.Key, evs []*session.Event) error {
	f.seen++
	if *f.fail && f.seen == f.n {
		*f.fail = false
		return errors.New("store down")
	}
	return session.AppendEvents(ctx, f.Service, key, evs)
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
	w.fail = 1 // the write of the user message and the first answer
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

// A write that stored the held user message but whose reply was lost, and
// a service without batches whose second write fails: either way the user
// message is not written a second time, and the redelivery resumes from a
// history in order (review finding: the flush wrote it again).
func TestHeldUserMessageIsWrittenOnce(t *testing.T) {
	t.Run("reply lost", func(t *testing.T) {
		f := newFixture(t, agenttest.Reply(agenttest.Text("Hi!")))
		w := withWriteLog(f)
		w.lost = 1
		if _, err := f.run(t, "inv-1", "hello"); err == nil {
			t.Fatal("a lost reply did not end the invocation")
		}
		if got := authors(f.session(t)); got != "[user:hello support:Hi!]" {
			t.Fatalf("session = %s", got)
		}
		// The redelivery finds the final answer: nothing runs again.
		if _, err := f.run(t, "inv-1", "hello"); err != nil {
			t.Fatal(err)
		}
		if got := authors(f.session(t)); got != "[user:hello support:Hi!]" {
			t.Fatalf("session after the redelivery = %s", got)
		}
	})
	t.Run("no batches, second write fails", func(t *testing.T) {
		f := newFixture(t, agenttest.Reply(agenttest.Text("Hi!")), agenttest.Reply(agenttest.Text("Hi again!")))
		// One write per event; the model response's write fails.
		f.runner.Sessions = &secondWriteFails{Service: oneByOne{f.sessions}}
		if _, err := f.run(t, "inv-1", "hello"); err == nil {
			t.Fatal("the failed write did not end the invocation")
		}
		if got := authors(f.session(t)); got != "[user:hello]" {
			t.Fatalf("session = %s, want the user message once", got)
		}
		if _, err := f.run(t, "inv-1", "hello"); err != nil {
			t.Fatal(err)
		}
		if got := authors(f.session(t)); got != "[user:hello support:Hi again!]" {
			t.Fatalf("session after the redelivery = %s", got)
		}
	})
}

// secondWriteFails fails the second AppendEvent call only.
type secondWriteFails struct {
	session.Service
	n int
}

func (s *secondWriteFails) AppendEvent(ctx context.Context, key session.Key, ev *session.Event) error {
	s.n++
	if s.n == 2 {
		return errors.New("store down")
	}
	return s.Service.AppendEvent(ctx, key, ev)
}

// A caller that stops iterating before anything was stored (on a streamed
// partial event), with the store down: no panic, nothing more is yielded.
func TestStoppingEarlyWithAFailingFlushDoesNotPanic(t *testing.T) {
	f := newFixture(t, agenttest.Reply(agenttest.Partial("Hel"), agenttest.Text("Hello")))
	w := withWriteLog(f)
	w.fail = 5
	for ev, err := range f.runner.Run(context.Background(), agent.RunRequest{
		InvocationID: "inv-1", UserID: "u1", SessionID: "s1", Stream: true,
		Message: agenttest.Text("hi").Content,
	}) {
		if err != nil || ev == nil || !ev.Partial {
			t.Fatalf("first yield = %+v, %v; want the partial event", ev, err)
		}
		break
	}
}

// When the run fails and the flush of the held user message fails too, the
// invocation ends with the *SessionError (an infrastructure failure: the
// message goes back), not with the model's error (which could dead-letter
// it with the user message never stored).
func TestFailedFlushWinsOverTheRunsError(t *testing.T) {
	f := newFixture(t, agenttest.Fail(errors.New("bad request")))
	w := withWriteLog(f)
	w.fail = 1
	_, err := f.run(t, "inv-1", "hello")
	var se *agent.SessionError
	if !errors.As(err, &se) {
		t.Fatalf("error = %v, want a *SessionError", err)
	}
}

// With DeferFinalWrite, Invoke leaves the events still held when the
// invocation completes (the final answer and what came before it since the
// last write) to the caller, in order; a model response asking for a tool
// is still stored before the tool runs.
func TestDeferFinalWriteLeavesTheLastWriteToTheCaller(t *testing.T) {
	for _, tc := range []struct {
		name           string
		steps          []agenttest.Step
		writes, unstor string
	}{
		{"answer only", []agenttest.Step{agenttest.Reply(agenttest.Text("Hi!"))}, "[]", "[user answer]"},
		{"after a tool", []agenttest.Step{agenttest.Reply(getOrder("A-1042")), agenttest.Reply(agenttest.Text("It shipped."))}, "[[user support]]", "[response answer]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.steps...)
			w := withWriteLog(f)
			out, err := f.runner.Invoke(context.Background(), agent.RunRequest{
				InvocationID: "inv-1", UserID: "u1", SessionID: "s1", DeferFinalWrite: true,
				Message: agenttest.Text("hello").Content,
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := w.log(); got != tc.writes {
				t.Fatalf("writes = %s, want %s", got, tc.writes)
			}
			var kinds []string
			for _, e := range out.Unstored {
				kinds = append(kinds, eventKind(e))
			}
			if got := fmt.Sprint(kinds); got != tc.unstor {
				t.Fatalf("Unstored = %s, want %s", got, tc.unstor)
			}
			if out.Final == nil || out.Final != out.Unstored[len(out.Unstored)-1] || out.Events[len(out.Events)-1] != out.Final {
				t.Fatalf("Final = %+v; want the last unstored event, also last in Events", out.Final)
			}
			// What the caller stores completes the session.
			if err := session.AppendEvents(context.Background(), f.sessions, session.Key{App: "support", UserID: "u1", SessionID: "s1"}, out.Unstored); err != nil {
				t.Fatal(err)
			}
			if s := f.session(t); s.Events[len(s.Events)-1].ID != out.Final.ID {
				t.Fatal("the final answer is not the session's last event")
			}
		})
	}
}

// A failing invocation stores what it holds itself, DeferFinalWrite or
// not, and leaves nothing to the caller; Run ignores the option.
func TestDeferFinalWriteOnlyOnSuccessAndForInvoke(t *testing.T) {
	f := newFixture(t, agenttest.Reply(getOrder("A-1042")), agenttest.Fail(errors.New("bad request")))
	w := withWriteLog(f)
	out, err := f.runner.Invoke(context.Background(), agent.RunRequest{
		InvocationID: "inv-1", UserID: "u1", SessionID: "s1", DeferFinalWrite: true,
		Message: agenttest.Text("hello").Content,
	})
	if err == nil || len(out.Unstored) != 0 {
		t.Fatalf("Invoke = %d unstored, %v; want none and the model's error", len(out.Unstored), err)
	}
	if got := w.log(); got != "[[user support] [support]]" {
		t.Fatalf("writes = %s, want the function response flushed", got)
	}

	g := newFixture(t, agenttest.Reply(agenttest.Text("Hi!")))
	wg := withWriteLog(g)
	if _, err := agenttest.Collect(g.runner.Run(context.Background(), agent.RunRequest{
		InvocationID: "inv-1", UserID: "u1", SessionID: "s1", DeferFinalWrite: true,
		Message: agenttest.Text("hello").Content,
	})); err != nil {
		t.Fatal(err)
	}
	if got := wg.log(); got != "[[user support]]" {
		t.Fatalf("Run's writes = %s, want the answer stored", got)
	}
}

// A caller that stops on the function response the end's flush yields
// (the next model call failed) gets nothing more: no panic from a yield
// after its loop body returned false (review finding).
func TestStoppingOnAFlushedResponseYieldsNothingMore(t *testing.T) {
	f := newFixture(t, agenttest.Reply(getOrder("A-1042")), agenttest.Fail(errors.New("bad request")))
	var kinds []string
	for ev, err := range f.ask(false) {
		if err != nil {
			kinds = append(kinds, "error")
			break
		}
		kinds = append(kinds, eventKind(ev))
		if eventKind(ev) == "response" {
			break
		}
	}
	// The response comes after the second model call failed: the flush
	// yielded it.
	if got := fmt.Sprint(kinds); got != "[call response]" || f.model.Calls() != 2 {
		t.Fatalf("the loop body saw %s after %d model calls, want [call response] after 2", got, f.model.Calls())
	}
}

// A store without batches gains no write by holding a function response,
// so it is stored (and yielded) at once, as before.
func TestNoBatchesStoresFunctionResponsesAtOnce(t *testing.T) {
	f := newFixture(t, agenttest.Reply(getOrder("A-1042")), agenttest.Reply(agenttest.Text("It shipped.")))
	stored := storedAtRun(t, f)
	seen := ""
	f.runner.Sessions = oneByOne{f.sessions}
	for ev, err := range f.ask(false) {
		if err != nil {
			t.Fatal(err)
		}
		if eventKind(ev) == "response" {
			seen = authors(f.session(t))
		}
	}
	if seen != "[user:Where is A-1042? support: support:]" || *stored != "[user:Where is A-1042? support:]" {
		t.Fatalf("session when the response was yielded = %q; want it stored already", seen)
	}
}

// ask runs inv-1 asking where A-1042 is, streaming or not.
func (f *fixture) ask(stream bool) iter.Seq2[*session.Event, error] {
	return f.runner.Run(context.Background(), agent.RunRequest{
		InvocationID: "inv-1", UserID: "u1", SessionID: "s1", Stream: stream,
		Message: agenttest.Text("Where is A-1042?").Content,
	})
}

// countRuns replaces get_order with a tool that counts its runs and then
// answers like get_order.
func countRuns(f *fixture) *int {
	runs := 0
	orig := f.agent.Tools[0]
	f.agent.Tools[0] = failingTool{name: orig.Name(), run: func(ctx context.Context, args map[string]any) (map[string]any, error) {
		runs++
		return orig.Run(ctx, args)
	}}
	return &runs
}
