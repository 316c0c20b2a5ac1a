package worker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/cooldown"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// fakeCooldown answers every Status with until and counts the calls.
type fakeCooldown struct {
	until time.Time
	calls atomic.Int32
}

func (f *fakeCooldown) Status(ctx context.Context, model string) (time.Time, error) {
	f.calls.Add(1)
	return f.until, nil
}

// The cooldown pre-check reuses a model's status for CooldownCheckInterval
// instead of asking the store before every message.
func TestCooldownStatusIsCachedAcrossMessages(t *testing.T) {
	for _, tc := range []struct {
		name      string
		interval  time.Duration
		wantCalls int32
	}{
		{name: "cached for the interval", interval: time.Hour, wantCalls: 1},
		{name: "negative interval asks every time", interval: -1, wantCalls: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			cd := &fakeCooldown{}
			e.deps = func(d *worker.Deps) { d.Cooldown = cd }
			llm := agenttest.NewScriptedModel(agenttest.Reply(agenttest.Text("a")), agenttest.Reply(agenttest.Text("b")), agenttest.Reply(agenttest.Text("c")))
			e.startWorker("w1", e.supportAgent(llm), worker.Config{CooldownCheckInterval: tc.interval})
			// One at a time, so each message finds the previous answer.
			for i := range 3 {
				id := fmt.Sprintf("inv-cd-%d", i)
				e.publish(request(id, fmt.Sprintf("s%d", i), "hi"), nil)
				if res := e.await(id); res.Status != envelope.StatusCompleted {
					t.Fatalf("%s: result = %+v", id, res)
				}
			}
			if got := cd.calls.Load(); got != tc.wantCalls {
				t.Fatalf("cooldown store asked %d times for 3 messages, want %d", got, tc.wantCalls)
			}
		})
	}
}

// While the model is cooling down, messages go back with a delay without
// starting, also when the answer comes from the cache.
func TestOpenCooldownNaksBeforeStarting(t *testing.T) {
	e := newEnv(t)
	cd := &fakeCooldown{until: time.Now().Add(time.Hour)}
	e.deps = func(d *worker.Deps) { d.Cooldown = cd }
	llm := agenttest.NewScriptedModel(agenttest.Reply(agenttest.Text("never")))
	w := e.startWorker("w1", e.supportAgent(llm), worker.Config{CooldownCheckInterval: time.Hour})
	for i := range 2 {
		e.publish(request(fmt.Sprintf("inv-cool-%d", i), fmt.Sprintf("s%d", i), "hi"), nil)
		eventually(t, "nak_cooldown", func() bool { return w.count("support", "nak_cooldown") == float64(i+1) })
	}
	if cd.calls.Load() != 1 || llm.Calls() != 0 || e.pending() != 2 {
		t.Fatalf("store calls=%d model calls=%d pending=%d, want 1, 0, 2", cd.calls.Load(), llm.Calls(), e.pending())
	}
}

// A run refused by the model decorator (the cooldown opened after the
// cached check) teaches the cache: the next message goes back before
// starting, without a model call and without counting as a run.
func TestCooldownRefusalIsCachedForTheNextMessages(t *testing.T) {
	e := newEnv(t)
	cd := &fakeCooldown{} // the store still said "closed" when last asked
	e.deps = func(d *worker.Deps) { d.Cooldown = cd }
	refused := &cooldown.OpenError{Model: "scripted", Until: time.Now().Add(time.Hour)}
	llm := agenttest.NewScriptedModel(agenttest.Fail(refused), agenttest.Reply(agenttest.Text("never")))
	w := e.startWorker("w1", e.supportAgent(llm), worker.Config{CooldownCheckInterval: time.Hour})
	e.publish(request("inv-refused", "s1", "hi"), nil)
	eventually(t, "first nak_cooldown", func() bool { return w.count("support", "nak_cooldown") == 1 })
	if llm.Calls() != 1 {
		t.Fatalf("model calls = %d, want 1 (the refused one)", llm.Calls())
	}
	e.publish(request("inv-next", "s2", "hi"), nil)
	eventually(t, "second nak_cooldown", func() bool { return w.count("support", "nak_cooldown") == 2 })
	if llm.Calls() != 1 || cd.calls.Load() != 1 {
		t.Fatalf("model calls = %d, store calls = %d: the next message must go back before starting", llm.Calls(), cd.calls.Load())
	}
	if _, err := e.invs.Get(context.Background(), "inv-next"); !errors.Is(err, session.ErrInvocationNotFound) {
		t.Fatalf("inv-next has a record (%v): it started and counted as a run", err)
	}
}

// publishSpy is a JetStream that notes the subjects whose publish has
// returned successfully.
type publishSpy struct {
	jetstream.JetStream
	mu   sync.Mutex
	done map[string]bool
}

func (p *publishSpy) Publish(ctx context.Context, subject string, data []byte, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	ack, err := p.JetStream.Publish(ctx, subject, data, opts...)
	if err == nil {
		p.mu.Lock()
		p.done[subject] = true
		p.mu.Unlock()
	}
	return ack, err
}

func (p *publishSpy) published(subject string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done[subject]
}

// releaseSpy is a Locker that, on every Release, notes what is durable at
// that moment: the invocation record's status and whether the worker's
// result publish has returned.
type releaseSpy struct {
	session.Locker
	e  *env
	js *publishSpy

	mu       sync.Mutex
	releases map[string][]releaseSeen // invocation id → releases
}

func newReleaseSpy(e *env) *releaseSpy {
	spy := &releaseSpy{Locker: e.locker, e: e, js: &publishSpy{JetStream: e.js, done: map[string]bool{}}, releases: map[string][]releaseSeen{}}
	e.deps = func(d *worker.Deps) { d.Locker, d.JS = spy, spy.js }
	return spy
}

type releaseSeen struct {
	status session.InvocationStatus
	result bool
}

func (s *releaseSpy) Release(ctx context.Context, key session.Key, owner string) error {
	// Owner tokens are <worker>/<invocation>/<stream seq>/<delivery>.
	id := strings.Split(owner, "/")[1]
	seen := releaseSeen{result: s.js.published(s.e.sc.ResultSubject(id))}
	if rec, err := s.e.invs.Get(ctx, id); err == nil {
		seen.status = rec.Status
	}
	s.mu.Lock()
	s.releases[id] = append(s.releases[id], seen)
	s.mu.Unlock()
	return s.Locker.Release(ctx, key, owner)
}

func (s *releaseSpy) seen(id string) []releaseSeen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]releaseSeen(nil), s.releases[id]...)
}

// The session lock is released exactly once, and never before the
// invocation record is final, on both the completion and the dead-letter
// path; on the dead-letter path also not before the result is published:
// whoever takes the session next must find the outcome durable (a replay
// must not publish its result before this one). A completed record is
// final and holds the result, so the next holder runs nothing and can only
// re-publish the same bytes: there the release goes with the record (one
// round trip with redissession.Gate), before the publish.
func TestSessionLockReleasedOnceOutcomeIsDurable(t *testing.T) {
	for _, tc := range []struct {
		name       string
		step       agenttest.Step
		wantStatus session.InvocationStatus
		action     string
		// wantResult: the result must be published before the release.
		wantResult bool
	}{
		{name: "completed", step: agenttest.Reply(agenttest.Text("done")), wantStatus: session.InvocationCompleted, action: "completed"},
		{name: "dead-lettered", step: agenttest.Fail(errors.New("something odd")), wantStatus: session.InvocationDeadLettered, action: "dead_lettered", wantResult: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			spy := newReleaseSpy(e)
			w := e.startWorker("w1", e.supportAgent(agenttest.NewScriptedModel(tc.step)), worker.Config{})
			e.publish(request("inv-rel", "s1", "hi"), nil)
			e.await("inv-rel")
			eventually(t, "ack", func() bool { return e.pending() == 0 && w.count("support", tc.action) == 1 })
			eventually(t, "release", func() bool { return len(spy.seen("inv-rel")) > 0 })
			got := spy.seen("inv-rel")
			if len(got) != 1 || got[0].status != tc.wantStatus || (tc.wantResult && !got[0].result) {
				t.Fatalf("releases = %+v, want one, after the record (%s) (and the result: %v)", got, tc.wantStatus, tc.wantResult)
			}
			key := session.Key{App: "support", UserID: "u1", SessionID: "s1"}
			if _, err := e.locker.Acquire(context.Background(), key, "next", time.Minute); err != nil {
				t.Fatalf("session still locked after the release: %v", err)
			}
		})
	}
}
