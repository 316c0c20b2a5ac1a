package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// malformed is a request refused as BAD_INPUT (no user_id, session_id or
// message) whose invocation id is readable.
func malformed(id string) []byte {
	return []byte(`{"v":1,"invocation_id":"` + id + `","agent":"support"}`)
}

// storedResult returns the result stored for id (nil when there is none).
func (e *env) storedResult(id string) []byte {
	e.t.Helper()
	ctx := context.Background()
	s, err := e.js.Stream(ctx, e.sc.ResultsStream)
	if err != nil {
		e.t.Fatal(err)
	}
	last, err := s.GetLastMsgForSubject(ctx, e.sc.ResultSubject(id))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return last.Data
}

// Regression (found in review, twenty-fifth session): an invocation
// completed and its "completed" result is the one stored on
// agent.results.<id> (1 message per subject: the producer's `await` and
// client.Await read the last one). A later malformed message carrying the
// same invocation id (a producer's retry with a broken body, or any
// producer allowed to publish to some agent's subject) was refused as
// BAD_INPUT, and deadLetterRaw published "failed: The request was
// rejected: ..." over it without reading the invocation record: a user who
// awaited a refund that was made was told it was not done. The refusal now
// leaves a completed invocation's result as it is (re-publishing the
// record's if the stream lost it), and a failed or dead-lettered one's
// (TestBadInputLeavesAReplaysNewerResult); the DLQ entry keeps the refused
// bytes with the reason either way. A running invocation's refusal is
// published: the running record may be the refused message's own, with no
// run left to answer (found in review of this session's fix, twenty-fifth
// session: TestBadInputOfARunningInvocationIsAnswered; this case used to
// want nothing published), and a live run's result comes after it; one
// that came first, completed, is put back ("running, completed meanwhile").
func TestBadInputKeepsTheInvocationsResult(t *testing.T) {
	t.Run("completed", func(t *testing.T) {
		e := newEnv(t)
		w := e.startWorker("w1", e.supportAgent(agenttest.NewScriptedModel(agenttest.Reply(agenttest.Text("done: refunded")))), worker.Config{})
		const id = "inv-r8-done"
		e.publish(request(id, "s1", "refund A-1042"), nil)
		if res := e.await(id); res.Status != envelope.StatusCompleted {
			t.Fatalf("first run: %+v", res)
		}
		eventually(t, "completion acked", func() bool { return e.pending() == 0 })
		completed := e.storedResult(id)
		e.publishRaw(e.sc.RequestSubject("support"), malformed(id), id+"-retry", nil)
		eventually(t, "the malformed duplicate refused", func() bool { return e.pending() == 0 && w.count("support", "bad_input") == 1 })
		if got := e.storedResult(id); string(got) != string(completed) {
			t.Fatalf("the stored result of the completed invocation %s is now %s, want the completed one %s", id, got, completed)
		}
		if en := e.dlqEntries(); len(en) != 1 || en[0].Class != "BAD_INPUT" || en[0].InvocationID != id || string(en[0].Request) != string(malformed(id)) {
			t.Fatalf("DLQ entries %+v, want the refused bytes as BAD_INPUT", en)
		}
	})
	t.Run("completed, result lost", func(t *testing.T) {
		e := newEnv(t)
		w := e.startWorker("w1", e.supportAgent(agenttest.NewScriptedModel(agenttest.Reply(agenttest.Text("done: refunded")))), worker.Config{})
		const id = "inv-r8-done-purged"
		e.publish(request(id, "s1", "refund A-1042"), nil)
		e.await(id)
		eventually(t, "completion acked", func() bool { return e.pending() == 0 })
		completed := e.storedResult(id)
		ctx := context.Background()
		s, err := e.js.Stream(ctx, e.sc.ResultsStream)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Purge(ctx, jetstream.WithPurgeSubject(e.sc.ResultSubject(id))); err != nil {
			t.Fatal(err)
		}
		e.publishRaw(e.sc.RequestSubject("support"), malformed(id), id+"-retry", nil)
		eventually(t, "the malformed duplicate refused", func() bool { return e.pending() == 0 && w.count("support", "bad_input") == 1 })
		if got := e.storedResult(id); string(got) != string(completed) {
			t.Fatalf("stored result %s, want the record's completed one re-published: %s", got, completed)
		}
	})
	t.Run("running", func(t *testing.T) {
		e := newEnv(t)
		w := e.startWorker("w1", e.supportAgent(agenttest.NewScriptedModel()), worker.Config{})
		const id = "inv-r8-running"
		if err := e.invs.Transition(context.Background(), &session.Invocation{ID: id, Status: session.InvocationRunning,
			Session: session.Key{App: "support", UserID: "u1", SessionID: "s1"}}); err != nil {
			t.Fatal(err)
		}
		e.publishRaw(e.sc.RequestSubject("support"), malformed(id), id+"-retry", nil)
		eventually(t, "the malformed copy refused", func() bool { return e.pending() == 0 && w.count("support", "bad_input") == 1 })
		if r, _ := envelope.DecodeResult(e.storedResult(id)); r == nil || r.Status != envelope.StatusFailed || r.ErrorClass != "BAD_INPUT" {
			t.Fatalf("stored result %s, want the refusal: the running record may be the refused message's own, "+
				"and a live run publishes its result after it", e.storedResult(id))
		}
		if en := e.dlqEntries(); len(en) != 1 || en[0].Class != "BAD_INPUT" {
			t.Fatalf("DLQ entries %+v, want one BAD_INPUT entry", en)
		}
	})
	t.Run("running, completed meanwhile", func(t *testing.T) {
		e := newEnv(t)
		const id = "inv-r8-running-done"
		key := session.Key{App: "support", UserID: "u1", SessionID: "s1"}
		ctx := context.Background()
		if err := e.invs.Transition(ctx, &session.Invocation{ID: id, Status: session.InvocationRunning, Session: key}); err != nil {
			t.Fatal(err)
		}
		done := &envelope.Result{V: envelope.Version, InvocationID: id, Status: envelope.StatusCompleted, Content: "done: refunded", Attempts: 1}
		completed, err := done.Encode()
		if err != nil {
			t.Fatal(err)
		}
		payload, err := json.Marshal(worker.Record{Result: done})
		if err != nil {
			t.Fatal(err)
		}
		// The refusal reads the running record; its live run completes
		// (record, then result) before the refusal's result goes.
		invs := &afterFirstGet{MemoryInvocations: e.invs, id: id, then: func() {
			if err := e.invs.Transition(ctx, &session.Invocation{ID: id, Status: session.InvocationCompleted, Session: key, Result: payload}); err != nil {
				t.Error(err)
			}
			if _, err := e.js.Publish(ctx, e.sc.ResultSubject(id), completed,
				jetstream.WithMsgID(worker.ResultMsgID(id, 0, envelope.StatusCompleted))); err != nil {
				t.Error(err)
			}
		}}
		e.deps = func(d *worker.Deps) { d.Invocations = invs }
		w := e.startWorker("w1", e.supportAgent(agenttest.NewScriptedModel()), worker.Config{})
		e.publishRaw(e.sc.RequestSubject("support"), malformed(id), id+"-retry", nil)
		eventually(t, "the malformed copy refused", func() bool { return e.pending() == 0 && w.count("support", "bad_input") == 1 })
		if got := e.storedResult(id); string(got) != string(completed) {
			t.Fatalf("stored result %s, want the run's completed one %s: the refusal read the record running, "+
				"the run completed before the refusal's result went, and it stayed over the completed one", got, completed)
		}
	})
	t.Run("failed", func(t *testing.T) {
		e := newEnv(t)
		const id = "inv-r8-failed-replayed"
		key := session.Key{App: "support", UserID: "u1", SessionID: "s1"}
		ctx := context.Background()
		// The record says failed (as read before a replay took the
		// session); the stream holds the replay's newer result.
		failed := &envelope.Result{V: envelope.Version, InvocationID: id, Status: envelope.StatusFailed, ErrorClass: "POLICY", Attempts: 1}
		payload, err := json.Marshal(worker.Record{Result: failed, Class: "POLICY"})
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range []*session.Invocation{{ID: id, Session: key, Status: session.InvocationRunning},
			{ID: id, Session: key, Status: session.InvocationFailed, Result: payload}} {
			if err := e.invs.Transition(ctx, rec); err != nil {
				t.Fatal(err)
			}
		}
		newer, err := (&envelope.Result{V: envelope.Version, InvocationID: id, Status: envelope.StatusCompleted, Content: "done", Attempts: 1}).Encode()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.js.Publish(ctx, e.sc.ResultSubject(id), newer); err != nil {
			t.Fatal(err)
		}
		w := e.startWorker("w1", e.supportAgent(agenttest.NewScriptedModel()), worker.Config{})
		e.publishRaw(e.sc.RequestSubject("support"), malformed(id), id+"-retry", nil)
		eventually(t, "the malformed copy refused", func() bool { return e.pending() == 0 && w.count("support", "bad_input") == 1 })
		if got := e.storedResult(id); string(got) != string(newer) {
			t.Fatalf("stored result %s, want the newer one left as it is %s", got, newer)
		}
	})
}

// afterFirstGet runs then after the first Get of id has read the record,
// before it answers.
type afterFirstGet struct {
	*session.MemoryInvocations
	id   string
	once sync.Once
	then func()
}

func (s *afterFirstGet) Get(ctx context.Context, id string) (*session.Invocation, error) {
	rec, err := s.MemoryInvocations.Get(ctx, id)
	if id == s.id {
		s.once.Do(s.then)
	}
	return rec, err
}

// getFailInvs fails Get while failing is above zero (the invocation store
// down).
type getFailInvs struct {
	*session.MemoryInvocations
	failing atomic.Int32
}

func (s *getFailInvs) Get(ctx context.Context, id string) (*session.Invocation, error) {
	if s.failing.Add(-1) >= 0 {
		return nil, errors.New("injected: invocation store down")
	}
	return s.MemoryInvocations.Get(ctx, id)
}

// Regression (found in review, twenty-fifth session; with
// TestBadInputKeepsTheInvocationsResult): the refusal's record read that
// fails does not lose the message: it is put back, with nothing published,
// and the redelivery refuses it once the store answers.
func TestBadInputRecordReadFailurePutsBack(t *testing.T) {
	e := newEnv(t)
	invs := &getFailInvs{MemoryInvocations: e.invs}
	invs.failing.Store(2)
	e.deps = func(d *worker.Deps) { d.Invocations = invs }
	w := e.startWorker("w1", e.supportAgent(agenttest.NewScriptedModel()), worker.Config{InfraBackoffMax: 50 * time.Millisecond})
	const id = "inv-r8-bad-store-down"
	e.publishRaw(e.sc.RequestSubject("support"), malformed(id), id, nil)
	eventually(t, "the refusal terminated", func() bool { return e.pending() == 0 && w.count("support", "bad_input") == 1 })
	if n := w.count("_unknown", "nak_infra"); n != 2 {
		t.Errorf("nak_infra = %v, want 2 (one per failed record read)", n)
	}
	if en := e.dlqEntries(); len(en) != 1 {
		t.Fatalf("DLQ entries %d, want 1", len(en))
	}
	if r, _ := envelope.DecodeResult(e.storedResult(id)); r == nil || r.Status != envelope.StatusFailed {
		t.Fatalf("stored result %s, want the refusal", e.storedResult(id))
	}
}
