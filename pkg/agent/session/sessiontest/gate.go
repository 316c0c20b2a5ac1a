package sessiontest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// GateParts are a Gate and the Locker and InvocationStore over the same
// storage, which the suite uses to set up and check what the Gate did.
type GateParts struct {
	Gate        session.Gate            // Gate is the Gate under test.
	Locker      session.Locker          // Locker works on the Gate's locks.
	Invocations session.InvocationStore // Invocations works on the Gate's records.
	// Sessions is the session store a session.SessionGate reads in Enter's
	// step and a session.EventGate writes in Finish's; the EnterWithSession
	// subtest runs when Gate is a SessionGate and Sessions is set, the
	// FinishWithEvents one (through session.FinishWithEvents, so for any
	// Gate) when Sessions is set.
	Sessions session.Service
}

func enter(p GateParts, ctx context.Context, key session.Key, owner string, lease time.Duration, running *session.Invocation) (*session.Lease, *session.Invocation, error) {
	e, err := p.Gate.Enter(ctx, key, owner, lease, running)
	if e == nil {
		panic("Gate.Enter returned a nil Entry")
	}
	return e.Lease, e.Existing, err
}

// GateFactory returns fresh GateParts for one subtest.
type GateFactory func(t *testing.T) GateParts

// RunGate runs the Gate conformance suite against f: Enter and Finish must
// do what the Locker and InvocationStore calls they stand for do.
func RunGate(t *testing.T, f GateFactory) {
	t.Helper()
	t.Run("EnterNewCreatesRunning", func(t *testing.T) { testGateEnterNew(t, f) })
	t.Run("EnterExistingStoresNothing", func(t *testing.T) { testGateEnterExisting(t, f) })
	t.Run("EnterLockedChangesNothing", func(t *testing.T) { testGateEnterLocked(t, f) })
	t.Run("EnterLocksForTheLease", func(t *testing.T) { testGateEnterLease(t, f) })
	t.Run("EnterRejectsBadArguments", func(t *testing.T) { testGateEnterArgs(t, f) })
	t.Run("FinishStoresAndReleases", func(t *testing.T) { testGateFinish(t, f) })
	t.Run("FinishCompletedIsFinal", func(t *testing.T) { testGateFinishCompleted(t, f) })
	t.Run("FinishNeverReleasesAnotherOwner", func(t *testing.T) { testGateFinishFenced(t, f) })
	t.Run("ConcurrentEntersOneRuns", func(t *testing.T) { testGateConcurrent(t, f) })
	t.Run("EnterWithSession", func(t *testing.T) { testGateEnterWithSession(t, f) })
	t.Run("FinishWithEvents", func(t *testing.T) { testGateFinishWithEvents(t, f) })
}

// testGateFinishWithEvents: session.FinishWithEvents stores the events in
// order with their state, then the record, and releases the lock; over a
// completed record it keeps the record and releases the lock as Finish
// would; events that cannot be stored leave the record and the lock alone.
func testGateFinishWithEvents(t *testing.T, f GateFactory) {
	p, ctx := f(t), context.Background()
	if p.Sessions == nil {
		t.Skip("no Sessions given")
	}
	if _, _, err := enter(p, ctx, gateKey, "w1", time.Minute, runningRec("inv-fe")); err != nil {
		t.Fatal(err)
	}
	evs := []*session.Event{
		{InvocationID: "inv-fe", Author: "support", Actions: session.Actions{StateDelta: map[string]any{"step": "tool"}}},
		{InvocationID: "inv-fe", Author: "support", Actions: session.Actions{StateDelta: map[string]any{"step": "final"}}},
	}
	done := &session.Invocation{ID: "inv-fe", Session: gateKey, Status: session.InvocationCompleted, Result: []byte(`{"ok":true}`)}
	released, err := session.FinishWithEvents(ctx, p.Gate, p.Sessions, done, gateKey, "w1", evs)
	if err != nil || !released {
		t.Fatalf("FinishWithEvents = %v, %v", released, err)
	}
	if done.FinishedAt.IsZero() || done.Attempts != 1 {
		t.Fatalf("record not updated with the stored values: %+v", done)
	}
	sess, err := p.Sessions.Get(ctx, gateKey)
	if err != nil || len(sess.Events) != 2 || sess.Events[0].ID != evs[0].ID || sess.Events[1].ID != evs[1].ID || sess.State["step"] != "final" {
		t.Fatalf("session = %+v, %v; want both events in order and step=final", sess, err)
	}
	if got := get(t, p.Invocations, "inv-fe"); got.Status != session.InvocationCompleted {
		t.Fatalf("stored = %+v", got)
	}
	if _, err := p.Locker.Acquire(ctx, gateKey, "w2", time.Minute); err != nil {
		t.Fatalf("the lock was not released: %v", err)
	}

	// Over a completed record: the record stays, the lock is released.
	// (Whether the events are stored is the backend's: the atomic Redis
	// step stores none, session.AppendThenFinish stores them first.)
	if err := p.Locker.Release(ctx, gateKey, "w2"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := enter(p, ctx, gateKey, "w3", time.Minute, runningRec("inv-fe2")); err != nil {
		t.Fatal(err)
	}
	transition(t, p.Invocations, &session.Invocation{ID: "inv-fe2", Session: gateKey, Status: session.InvocationCompleted, Result: []byte(`"first"`)})
	late := &session.Event{InvocationID: "inv-fe2", Author: "support"}
	released, err = session.FinishWithEvents(ctx, p.Gate, p.Sessions, &session.Invocation{ID: "inv-fe2", Session: gateKey, Status: session.InvocationCompleted, Result: []byte(`"second"`)}, gateKey, "w3", []*session.Event{late})
	var ce *session.InvocationCompletedError
	if !errors.As(err, &ce) || string(ce.Current.Result) != `"first"` || !released {
		t.Fatalf("FinishWithEvents over a completed record = %v, %v; want *InvocationCompletedError with the stored result, released", released, err)
	}
	if got := get(t, p.Invocations, "inv-fe2"); string(got.Result) != `"first"` {
		t.Fatalf("stored = %+v; want the first result kept", got)
	}

	// Events that cannot be stored (a partial event): nothing else happens.
	if _, _, err := enter(p, ctx, gateKey, "w4", time.Minute, runningRec("inv-fe3")); err != nil {
		t.Fatal(err)
	}
	bad := []*session.Event{{InvocationID: "inv-fe3", Author: "support", Partial: true}}
	released, err = session.FinishWithEvents(ctx, p.Gate, p.Sessions, &session.Invocation{ID: "inv-fe3", Session: gateKey, Status: session.InvocationCompleted, Result: []byte(`{}`)}, gateKey, "w4", bad)
	var ae *session.FinishAppendError
	if !errors.As(err, &ae) || !errors.Is(err, session.ErrPartialEvent) || released {
		t.Fatalf("FinishWithEvents with a partial event = %v, %v; want a *FinishAppendError wrapping ErrPartialEvent, not released", released, err)
	}
	if got := get(t, p.Invocations, "inv-fe3"); got.Status != session.InvocationRunning {
		t.Fatalf("record = %+v; want still running", got)
	}
	if _, err := p.Locker.Acquire(ctx, gateKey, "w5", time.Minute); !errors.Is(err, session.ErrLocked) {
		t.Fatalf("Acquire by another owner = %v; want ErrLocked (the lock still held)", err)
	}
}

// testGateEnterWithSession: a SessionGate's Enter reads the session as
// GetOrCreate would when it takes the lock, and nothing when the lock is
// held; the lock and record work as Enter's.
func testGateEnterWithSession(t *testing.T, f GateFactory) {
	p, ctx := f(t), context.Background()
	sg, ok := p.Gate.(session.SessionGate)
	if !ok || p.Sessions == nil {
		t.Skip("not a SessionGate, or no Sessions given")
	}
	if err := p.Sessions.AppendEvent(ctx, gateKey, &session.Event{InvocationID: "inv-0", Author: session.AuthorUser,
		Actions: session.Actions{StateDelta: map[string]any{"tier": "gold"}}}); err != nil {
		t.Fatal(err)
	}
	e, err := sg.EnterWithSession(ctx, gateKey, "w1", time.Minute, runningRec("inv-ws"), p.Sessions)
	if err != nil || e.Lease == nil || e.Existing != nil {
		t.Fatalf("EnterWithSession = %+v, %v; want a lease and no existing record", e, err)
	}
	if e.Session == nil || e.Session.Key != gateKey || len(e.Session.Events) != 1 || e.Session.Events[0].InvocationID != "inv-0" || e.Session.State["tier"] != "gold" {
		t.Fatalf("Entry.Session = %+v; want the stored event and state", e.Session)
	}
	if rec, err := p.Invocations.Get(ctx, "inv-ws"); err != nil || rec.Status != session.InvocationRunning {
		t.Fatalf("record = %+v, %v; want running", rec, err)
	}
	e2, err := sg.EnterWithSession(ctx, gateKey, "w2", time.Minute, runningRec("inv-ws2"), p.Sessions)
	if !errors.Is(err, session.ErrLocked) || e2.Lease != nil || e2.Session != nil {
		t.Fatalf("EnterWithSession on a held lock = %+v, %v; want ErrLocked, no lease, no session", e2, err)
	}
	if _, err := p.Invocations.Get(ctx, "inv-ws2"); !errors.Is(err, session.ErrInvocationNotFound) {
		t.Fatalf("a locked EnterWithSession stored a record: %v", err)
	}
}

var gateKey = session.Key{App: "support", UserID: "u-1", SessionID: "s-1"}

func runningRec(id string) *session.Invocation {
	return &session.Invocation{ID: id, Session: gateKey, Status: session.InvocationRunning, Result: []byte(`{"replay_count":0}`)}
}

func testGateEnterNew(t *testing.T, f GateFactory) {
	p, ctx := f(t), context.Background()
	rec := runningRec("inv-new")
	l, existing, err := enter(p, ctx, gateKey, "w1", time.Minute, rec)
	if err != nil || l == nil || existing != nil {
		t.Fatalf("Enter = %+v, %+v, %v; want a lease, no existing record", l, existing, err)
	}
	if l.Owner != "w1" || l.Key != gateKey {
		t.Fatalf("lease = %+v", l)
	}
	if rec.Attempts != 1 || rec.CreatedAt.IsZero() || rec.UpdatedAt.IsZero() {
		t.Fatalf("running record not updated with the stored values: %+v", rec)
	}
	got := get(t, p.Invocations, "inv-new")
	if got.Status != session.InvocationRunning || got.Attempts != 1 || string(got.Result) != `{"replay_count":0}` || got.Session != gateKey {
		t.Fatalf("stored record = %+v", got)
	}
	_, err = p.Locker.Acquire(ctx, gateKey, "w2", time.Minute)
	wantLocked(t, err, "w1")
}

func testGateEnterExisting(t *testing.T, f GateFactory) {
	p, ctx := f(t), context.Background()
	transition(t, p.Invocations, &session.Invocation{ID: "inv-old", Session: gateKey, Status: session.InvocationRunning})
	transition(t, p.Invocations, &session.Invocation{ID: "inv-old", Session: gateKey, Status: session.InvocationDeadLettered, Error: "boom"})
	l, existing, err := enter(p, ctx, gateKey, "w1", time.Minute, runningRec("inv-old"))
	if err != nil || l == nil || existing == nil {
		t.Fatalf("Enter = %+v, %+v, %v; want a lease and the existing record", l, existing, err)
	}
	if existing.Status != session.InvocationDeadLettered || existing.Attempts != 1 || existing.Error != "boom" {
		t.Fatalf("existing = %+v", existing)
	}
	if got := get(t, p.Invocations, "inv-old"); got.Status != session.InvocationDeadLettered || got.Attempts != 1 {
		t.Fatalf("Enter changed an existing record: %+v", got)
	}
}

func testGateEnterLocked(t *testing.T, f GateFactory) {
	p, ctx := f(t), context.Background()
	if _, err := p.Locker.Acquire(ctx, gateKey, "holder", time.Minute); err != nil {
		t.Fatal(err)
	}
	l, existing, err := enter(p, ctx, gateKey, "w1", time.Minute, runningRec("inv-locked"))
	if l != nil || existing != nil {
		t.Fatalf("Enter on a held lock returned %+v, %+v", l, existing)
	}
	wantLocked(t, err, "holder")
	if _, err := p.Invocations.Get(ctx, "inv-locked"); !errors.Is(err, session.ErrInvocationNotFound) {
		t.Fatalf("a record was stored without the lock: %v", err)
	}
}

// testGateEnterLease: Enter (and a SessionGate's EnterWithSession) takes
// the lock with the lease it is given: held at first, free for another
// owner once the lease has run out. A Gate that locks for longer (a script
// without the caller's PX) leaves a crashed worker's session locked, and
// every later message of it is Nak'ed as busy.
func testGateEnterLease(t *testing.T, f GateFactory) {
	p, ctx := f(t), context.Background()
	const lease = 300 * time.Millisecond
	type entered struct {
		key   session.Key
		start time.Time // before Enter: the lease ends no earlier than start+lease
	}
	var all []entered
	start := time.Now()
	if _, _, err := enter(p, ctx, gateKey, "w1", lease, runningRec("inv-lease")); err != nil {
		t.Fatal(err)
	}
	all = append(all, entered{gateKey, start})
	if sg, ok := p.Gate.(session.SessionGate); ok && p.Sessions != nil {
		k := session.Key{App: gateKey.App, UserID: gateKey.UserID, SessionID: "s-lease"}
		rec := runningRec("inv-lease-ws")
		rec.Session = k
		start := time.Now()
		if _, err := sg.EnterWithSession(ctx, k, "w1", lease, rec, p.Sessions); err != nil {
			t.Fatalf("EnterWithSession: %v", err)
		}
		all = append(all, entered{k, start})
	}
	for _, e := range all {
		asked := time.Now()
		_, err := p.Locker.Acquire(ctx, e.key, "w2", time.Minute)
		switch {
		case err != nil:
			wantLocked(t, err, "w1")
		case asked.Before(e.start.Add(lease - 50*time.Millisecond)):
			t.Fatalf("another owner took %v %v after Enter with a %v lease", e.key, asked.Sub(e.start), lease)
		}
		// (Taken when asked too late to tell, on a loaded machine: the
		// lease ended, which is what the wait below checks.)
	}
	for _, e := range all {
		waitFor(t, 5*time.Second, fmt.Sprintf("another owner to take %v after Enter's %v lease", e.key, lease), func() bool {
			_, err := p.Locker.Acquire(ctx, e.key, "w3", time.Minute)
			var le *session.LockedError
			switch {
			case err == nil:
				return true
			case errors.As(err, &le) && le.Owner == "w2":
				return true // w2 took it above: the lease had ended
			case errors.Is(err, session.ErrLocked):
				return false
			}
			t.Fatalf("Acquire: %v", err)
			return false
		})
	}
}

func testGateEnterArgs(t *testing.T, f GateFactory) {
	p, ctx := f(t), context.Background()
	notRunning := runningRec("inv-x")
	notRunning.Status = session.InvocationCompleted
	if l, _, err := enter(p, ctx, gateKey, "w1", time.Minute, notRunning); err == nil || l != nil {
		t.Fatalf("Enter with a completed record = %+v, %v; want an error and no lock", l, err)
	}
	if l, _, err := enter(p, ctx, gateKey, "", time.Minute, runningRec("inv-x")); err == nil || l != nil {
		t.Fatalf("Enter with an empty owner = %+v, %v; want an error", l, err)
	}
	if _, err := p.Locker.Acquire(ctx, gateKey, "w2", time.Minute); err != nil {
		t.Fatalf("a rejected Enter left the lock held: %v", err)
	}
}

func testGateFinish(t *testing.T, f GateFactory) {
	p, ctx := f(t), context.Background()
	if _, _, err := enter(p, ctx, gateKey, "w1", time.Minute, runningRec("inv-fin")); err != nil {
		t.Fatal(err)
	}
	done := &session.Invocation{ID: "inv-fin", Session: gateKey, Status: session.InvocationCompleted, Result: []byte(`{"ok": true}`)}
	released, err := p.Gate.Finish(ctx, done, gateKey, "w1")
	if err != nil || !released {
		t.Fatalf("Finish = %v, %v", released, err)
	}
	if done.Attempts != 1 || done.FinishedAt.IsZero() || string(done.Result) != `{"ok":true}` {
		t.Fatalf("record not updated with the stored values: %+v", done)
	}
	if got := get(t, p.Invocations, "inv-fin"); got.Status != session.InvocationCompleted || got.FinishedAt.IsZero() {
		t.Fatalf("stored = %+v", got)
	}
	if _, err := p.Locker.Acquire(ctx, gateKey, "w2", time.Minute); err != nil {
		t.Fatalf("the lock was not released: %v", err)
	}
}

func testGateFinishCompleted(t *testing.T, f GateFactory) {
	p, ctx := f(t), context.Background()
	if _, _, err := enter(p, ctx, gateKey, "w1", time.Minute, runningRec("inv-twice")); err != nil {
		t.Fatal(err)
	}
	transition(t, p.Invocations, &session.Invocation{ID: "inv-twice", Session: gateKey, Status: session.InvocationCompleted, Result: []byte(`"first"`)})
	released, err := p.Gate.Finish(ctx, &session.Invocation{ID: "inv-twice", Session: gateKey, Status: session.InvocationDeadLettered}, gateKey, "w1")
	var ce *session.InvocationCompletedError
	if !errors.As(err, &ce) || string(ce.Current.Result) != `"first"` {
		t.Fatalf("Finish over a completed record = %v, want *InvocationCompletedError with the stored result", err)
	}
	if !released {
		t.Fatal("the lock is not released when the record was already completed")
	}
	if _, err := p.Locker.Acquire(ctx, gateKey, "w2", time.Minute); err != nil {
		t.Fatalf("the lock was not released: %v", err)
	}
}

func testGateFinishFenced(t *testing.T, f GateFactory) {
	p, ctx := f(t), context.Background()
	if _, err := p.Locker.Acquire(ctx, gateKey, "holder", time.Minute); err != nil {
		t.Fatal(err)
	}
	released, err := p.Gate.Finish(ctx, &session.Invocation{ID: "inv-stale", Session: gateKey, Status: session.InvocationFailed}, gateKey, "stale")
	if err != nil || !released {
		t.Fatalf("Finish by a stale owner = %v, %v; want stored, and the lock not ours any more", released, err)
	}
	_, err = p.Locker.Acquire(ctx, gateKey, "w2", time.Minute)
	wantLocked(t, err, "holder")
}

func testGateConcurrent(t *testing.T, f GateFactory) {
	p, ctx := f(t), context.Background()
	const n = 20
	var wg sync.WaitGroup
	var mu sync.Mutex
	entered, locked := 0, 0
	for i := range n {
		wg.Go(func() {
			l, existing, err := enter(p, ctx, gateKey, "w"+string(rune('a'+i)), time.Minute, runningRec("inv-race"))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && l != nil && existing == nil:
				entered++
			case errors.Is(err, session.ErrLocked):
				locked++
			default:
				t.Errorf("Enter = %+v, %+v, %v", l, existing, err)
			}
		})
	}
	wg.Wait()
	if entered != 1 || locked != n-1 {
		t.Fatalf("%d entered, %d found it locked; want 1 and %d", entered, locked, n-1)
	}
	if got := get(t, p.Invocations, "inv-race"); got.Attempts != 1 {
		t.Fatalf("attempts = %d, want 1", got.Attempts)
	}
}
