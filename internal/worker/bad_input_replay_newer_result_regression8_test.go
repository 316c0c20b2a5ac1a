package worker_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// holdFirstGet answers the first Get of id, then holds the answer back until
// release is closed: the refusal's record read answered just before a
// replay of the invocation takes the session.
type holdFirstGet struct {
	*session.MemoryInvocations
	id      string
	held    atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (s *holdFirstGet) Get(ctx context.Context, id string) (*session.Invocation, error) {
	rec, err := s.MemoryInvocations.Get(ctx, id)
	if id == s.id && s.held.CompareAndSwap(false, true) {
		close(s.entered)
		<-s.release
	}
	return rec, err
}

// Regression (found in review of this session's fix, twenty-fifth session):
// deadLetterRaw's record check reads the record without the session lock,
// and re-published a finished record's result (ensureResult) whenever it
// was not the last one stored. A malformed copy carrying the id of a
// dead-lettered invocation, refused while the DLQ replay of that invocation
// ran and completed, re-published the old dead_lettered result over the
// replay's completed one (one result per subject): the user's await,
// `producer await` and the replayer's stream look-ups saw "dead_lettered"
// for work that completed. A dead_lettered or failed record's result is
// now left as it is: the stored one is the record's own or a replay's
// newer one (unknownAgent, which re-publishes it, does so under the session
// lock).
func TestBadInputLeavesAReplaysNewerResult(t *testing.T) {
	e := newEnv(t)
	const id = "inv-r8d-dl-replayed"
	ctx := context.Background()
	key := session.Key{App: "support", UserID: "u1", SessionID: "s1"}
	// The invocation was dead-lettered (replay generation 0) and its
	// dead_lettered result published, as deadLetter leaves them.
	dl := &envelope.Result{V: envelope.Version, InvocationID: id, Status: envelope.StatusDeadLettered,
		ErrorClass: "SERVER", UserMessage: worker.MsgFailed, Attempts: 1}
	payload, err := json.Marshal(worker.Record{Result: dl, ReplayCount: 0, Class: "SERVER"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.invs.Transition(ctx, &session.Invocation{ID: id, Session: key, Status: session.InvocationRunning}); err != nil {
		t.Fatal(err)
	}
	if err := e.invs.Transition(ctx, &session.Invocation{ID: id, Session: key, Status: session.InvocationDeadLettered,
		Result: payload, Error: "server error"}); err != nil {
		t.Fatal(err)
	}
	data, err := dl.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.js.Publish(ctx, e.sc.ResultSubject(id), data,
		jetstream.WithMsgID(worker.ResultMsgID(id, 0, envelope.StatusDeadLettered))); err != nil {
		t.Fatal(err)
	}

	invs := &holdFirstGet{MemoryInvocations: e.invs, id: id, entered: make(chan struct{}), release: make(chan struct{})}
	e.deps = func(d *worker.Deps) { d.Invocations = invs }
	w := e.startWorker("w1", e.supportAgent(agenttest.NewScriptedModel(agenttest.Reply(agenttest.Text("done: refunded")))), worker.Config{})

	// A malformed copy with the invocation's id: its record read answers
	// dead_lettered ...
	e.publishRaw(e.sc.RequestSubject("support"), malformed(id), id+"-broken", nil)
	select {
	case <-invs.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the refusal never read the record")
	}
	// ... and the replay from the DLQ runs and completes meanwhile.
	e.publish(request(id, "s1", "refund A-1042"), map[string]string{envelope.HeaderReplayCount: "1", envelope.HeaderMsgID: "replay:" + id + ":1"})
	for {
		if r := e.await(id); r.Status == envelope.StatusCompleted {
			break
		}
	}
	close(invs.release)
	eventually(t, "the malformed copy refused", func() bool { return e.pending() == 0 && w.count("support", "bad_input") == 1 })

	got, err := envelope.DecodeResult(e.storedResult(id))
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != envelope.StatusCompleted {
		t.Fatalf("stored result of %s is %s after the replay completed: the refused malformed copy re-published "+
			"the stale record's result over the replay's completed one", id, got.Status)
	}
}
