package sessiontest_test

// Mutation tests of the session conformance suites (review): each builds a
// backend that is wrong in one way a user would hit (two workers in one
// session, a completed invocation run again, a session locked for good,
// resume markers lost), runs the suite against it in a child process, and
// fails when the suite passes it. A suite that passes such a backend lets a
// real backend with that bug ship.

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/mutanttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/sessiontest"
)

const mutantEnv = "SESSIONTEST_REVIEW_MUTANT"

// runSuiteOnMutant runs suite against the mutant kind in a child process
// and fails the test when the suite passes there (mutanttest.Run).
func runSuiteOnMutant(t *testing.T, kind, bug string, suite func(t *testing.T)) {
	t.Helper()
	mutanttest.Run(t, mutantEnv, kind, bug, suite)
}

var ctx = context.Background()

// pause is the round trip between a mutant's read and its write: between,
// or 20ms without one.
func pause(between func()) {
	if between != nil {
		between()
		return
	}
	time.Sleep(20 * time.Millisecond)
}

// ---------------------------------------------------------------------------
// Locker: a takeover of an expired lease that is a read, then a write in
// another round trip without a revision/owner check. Creating a free lock is
// atomic (so ExactlyOneOfManyWins passes); only the takeover races.

type racyTakeoverLocker struct {
	// between, if set, runs in the takeover's window (instead of a pause).
	between func()
	mu      sync.Mutex
	locks   map[session.Key]struct {
		owner   string
		expires time.Time
	}
}

func newRacyTakeoverLocker() *racyTakeoverLocker {
	return &racyTakeoverLocker{locks: map[session.Key]struct {
		owner   string
		expires time.Time
	}{}}
}

func (m *racyTakeoverLocker) set(key session.Key, owner string, lease time.Duration) *session.Lease {
	exp := time.Now().Add(lease)
	m.locks[key] = struct {
		owner   string
		expires time.Time
	}{owner, exp}
	return &session.Lease{Key: key, Owner: owner, TTL: lease, Expires: exp}
}

func (m *racyTakeoverLocker) Acquire(ctx context.Context, key session.Key, owner string, lease time.Duration) (*session.Lease, error) {
	if err := session.ValidateLockArgs(key, owner, lease, true); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.locks[key]
	switch {
	case !ok || cur.owner == owner:
		return m.set(key, owner, lease), nil // atomic create-if-absent / re-entry
	case time.Now().Before(cur.expires):
		return nil, &session.LockedError{Key: key, Owner: cur.owner, Until: cur.expires}
	}
	// BUG: expired: take it over with an unconditional write after the
	// read (a Put instead of a revision-checked Update).
	m.mu.Unlock()
	pause(m.between)
	m.mu.Lock()
	return m.set(key, owner, lease), nil
}

func (m *racyTakeoverLocker) Renew(ctx context.Context, key session.Key, owner string, lease time.Duration) (*session.Lease, error) {
	if err := session.ValidateLockArgs(key, owner, lease, true); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.locks[key]
	if !ok || cur.owner != owner || !time.Now().Before(cur.expires) {
		return nil, session.ErrNotOwner
	}
	return m.set(key, owner, lease), nil
}

func (m *racyTakeoverLocker) Release(ctx context.Context, key session.Key, owner string) error {
	if err := session.ValidateLockArgs(key, owner, 0, false); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.locks[key]
	if !ok || cur.owner != owner {
		return session.ErrNotOwner
	}
	delete(m.locks, key)
	if !time.Now().Before(cur.expires) {
		return session.ErrNotOwner
	}
	return nil
}

// Regression (found in review, twenty-first session): the lock suite fails a
// Locker whose takeover of an expired lease is not atomic (two contenders
// both win).
//
// Before the fix: the lock suite's exclusion test contends only on a free
// lock, and its takeover test has one contender, so a backend whose takeover
// of an expired lease is not atomic passes: two workers that find a crashed
// worker's lease expired both take the session and interleave their events
// (the thing the lock exists to prevent).
func TestLockerSuiteCatchesRacyTakeover(t *testing.T) {
	if os.Getenv(mutantEnv) == "" {
		// The mutant really is broken: two takeovers of one expired lease both win.
		// Both contenders read the expired lease before either writes.
		var inWindow sync.WaitGroup
		inWindow.Add(2)
		l := newRacyTakeoverLocker()
		l.between = func() { inWindow.Done(); inWindow.Wait() }
		k := session.Key{App: "a", UserID: "u", SessionID: "s"}
		crashed, err := l.Acquire(ctx, k, "crashed", time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for !time.Now().After(crashed.Expires) {
			time.Sleep(time.Millisecond)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		won := 0
		for _, o := range []string{"w1", "w2"} {
			wg.Go(func() {
				if _, err := l.Acquire(ctx, k, o, time.Minute); err == nil {
					mu.Lock()
					won++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if won != 2 {
			t.Fatalf("mutant sanity: %d takeovers won, want 2 (the mutant must be broken)", won)
		}
	}
	runSuiteOnMutant(t, "racy-takeover", "concurrent Acquires of an expired lease all win (non-atomic takeover: two workers in one session)", func(t *testing.T) {
		sessiontest.RunLocker(t, sessiontest.LockerFactory{New: func(t *testing.T) session.Locker { return newRacyTakeoverLocker() }})
	})
}

// ---------------------------------------------------------------------------
// InvocationStore mutants, both built on session.ApplyTransition.

type mutInvocations struct {
	between   func() // runs in a racy write's window (instead of a pause)
	kind      string
	mu        sync.Mutex
	recs      map[string]*session.Invocation
	retention time.Duration
}

func newMutInvocations(kind string, retention time.Duration) *mutInvocations {
	return &mutInvocations{kind: kind, recs: map[string]*session.Invocation{}, retention: retention}
}

func (m *mutInvocations) live(id string) *session.Invocation {
	rec, ok := m.recs[id]
	if !ok {
		return nil
	}
	since := rec.UpdatedAt
	if m.kind == "retention-from-creation" {
		// BUG: the retention runs from the record's creation (a TTL set
		// only when the key is created), not from its last transition.
		since = rec.CreatedAt
	}
	if !time.Now().Before(since.Add(m.retention)) {
		delete(m.recs, id)
		return nil
	}
	return rec
}

func cloneInv(r *session.Invocation) *session.Invocation {
	out := *r
	out.Result = append([]byte(nil), r.Result...)
	if len(r.Result) == 0 {
		out.Result = nil
	}
	return &out
}

func (m *mutInvocations) Get(ctx context.Context, id string) (*session.Invocation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.live(id)
	if rec == nil {
		return nil, session.ErrInvocationNotFound
	}
	return cloneInv(rec), nil
}

func (m *mutInvocations) Transition(ctx context.Context, rec *session.Invocation) error {
	if err := session.PrepareTransition(rec); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	prev := m.live(rec.ID)
	if prev != nil {
		prev = cloneInv(prev)
	}
	next, err := session.ApplyTransition(prev, rec, time.Now().UTC())
	if err != nil {
		return err
	}
	if m.kind == "racy-non-completion" && rec.Status != session.InvocationCompleted {
		// BUG: a completion is a conditional write (never over a
		// completed record), but running, failed and dead_lettered are
		// written unconditionally after the read that checked
		// "not completed": a completion landing in between is
		// overwritten.
		m.mu.Unlock()
		pause(m.between)
		m.mu.Lock()
	}
	m.recs[rec.ID] = cloneInv(next)
	*rec = *next
	return nil
}

// Regression (found in review, twenty-first session): the invocation suite
// fails a store whose retention runs from a record's creation, not from its
// last transition.
//
// Before the fix: the store's contract is that every transition "restarts
// the retention period" (so a completed invocation is recognised for the
// retention after it completed). The suite's Retention test completes the
// record right after creating it, so a backend that counts retention from
// creation passes: an invocation that completed long after its first run (a
// replay days later) loses its record early, and a late redelivery or replay
// runs it again.
func TestInvocationSuiteCatchesRetentionFromCreation(t *testing.T) {
	runSuiteOnMutant(t, "retention-from-creation", "a transition does not restart the retention (a record completed late is dropped early and the invocation runs again)", func(t *testing.T) {
		sessiontest.RunInvocations(t, sessiontest.InvocationFactory{New: func(t *testing.T, retention time.Duration) session.InvocationStore {
			return newMutInvocations("retention-from-creation", retention)
		}})
	})
}

// Regression (found in review, twenty-first session): the invocation suite
// fails a store whose running, failed or dead_lettered transition racing a
// completion overwrites the completed record.
//
// Before the fix: the suite's concurrency test races completions against
// completions only, so a backend whose running/failed/dead_lettered
// transitions are an unconditional write after a read passes: a redelivery's
// running (or a stale worker's dead_lettered) that races a completion
// overwrites the completed record; the completed invocation then runs again
// (its tools with it) and its result is lost.
func TestInvocationSuiteCatchesRunningOverwritingCompleted(t *testing.T) {
	if os.Getenv(mutantEnv) == "" {
		// The mutant really is broken: a completion during a running
		// transition's round trip is overwritten.
		s := newMutInvocations("racy-non-completion", time.Hour)
		if err := s.Transition(ctx, &session.Invocation{ID: "i", Status: session.InvocationRunning}); err != nil {
			t.Fatal(err)
		}
		s.between = func() {
			s.between = nil
			if err := s.Transition(ctx, &session.Invocation{ID: "i", Status: session.InvocationCompleted, Result: []byte(`{}`)}); err != nil {
				t.Error(err)
			}
		}
		if err := s.Transition(ctx, &session.Invocation{ID: "i", Status: session.InvocationRunning}); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Get(ctx, "i"); got.Status != session.InvocationRunning {
			t.Fatalf("mutant sanity: status %s, want running over completed (the mutant must be broken)", got.Status)
		}
	}
	runSuiteOnMutant(t, "racy-non-completion", "a running or dead_lettered transition racing a completion overwrites the completed record", func(t *testing.T) {
		sessiontest.RunInvocations(t, sessiontest.InvocationFactory{New: func(t *testing.T, retention time.Duration) session.InvocationStore {
			return newMutInvocations("racy-non-completion", retention)
		}})
	})
}

// ---------------------------------------------------------------------------
// Gate: Enter takes the lock without the caller's lease (as a script that
// forgot its PX would: here a day).

type fixedLeaseGate struct{ session.Gate }

func (g fixedLeaseGate) Enter(ctx context.Context, key session.Key, owner string, lease time.Duration, running *session.Invocation) (*session.Entry, error) {
	// BUG: the caller's lease is ignored.
	e, err := g.Gate.Enter(ctx, key, owner, 24*time.Hour, running)
	if e != nil && e.Lease != nil {
		e.Lease.TTL, e.Lease.Expires = lease, time.Now().Add(lease) // and it says it used it
	}
	return e, err
}

// Regression (found in review, twenty-first session): the Gate suite fails a
// Gate whose Enter locks for longer than the lease it is given.
//
// Before the fix: Gate.Enter "takes key's lock for owner, as Locker.Acquire"
// with the given lease, but the Gate suite only checks that the lock is held
// right after Enter (with a one-minute lease), never that it ends with the
// lease. A Gate whose Enter locks for a day (or for ever) passes: a worker
// that crashes after Enter leaves its session locked, and every later
// message of that session is Nak'ed as busy until then.
func TestGateSuiteCatchesEnterIgnoringLease(t *testing.T) {
	runSuiteOnMutant(t, "enter-ignores-lease", "Enter takes the lock for a day whatever lease it is given (a crashed worker's session stays locked)", func(t *testing.T) {
		sessiontest.RunGate(t, func(t *testing.T) sessiontest.GateParts {
			l, s := session.NewMemoryLocker(), session.NewMemoryInvocations(session.DefaultInvocationRetention)
			return sessiontest.GateParts{Gate: fixedLeaseGate{session.NewGate(l, s)}, Locker: l, Invocations: s, Sessions: session.NewMemory()}
		})
	})
}

// ---------------------------------------------------------------------------
// Service mutants wrapping the in-memory service.

type lossyService struct {
	*session.Memory
	kind string
}

// mangle returns what the mutant stores for ev (ev itself is stamped, as
// the contract says).
func (s lossyService) mangle(ev *session.Event) *session.Event {
	session.Stamp(ev, time.Now)
	cp := *ev
	switch s.kind {
	case "drops-markers":
		// BUG: an encoding that does not carry the resume markers.
		cp.CutOff, cp.Substituted, cp.ShortCircuited, cp.SameCall = false, false, false, false
		cp.Actions.EndInvocation = false
	case "stringifies-state":
		// BUG: state values stored as their text (a hash field per key
		// without JSON).
		if cp.Actions.StateDelta != nil {
			d := make(map[string]any, len(cp.Actions.StateDelta))
			for k, v := range cp.Actions.StateDelta {
				if v != nil {
					v = fmt.Sprint(v)
				}
				d[k] = v
			}
			cp.Actions.StateDelta = d
		}
	}
	return &cp
}

func (s lossyService) AppendEvent(ctx context.Context, key session.Key, ev *session.Event) error {
	return s.AppendEvents(ctx, key, []*session.Event{ev})
}

func (s lossyService) AppendEvents(ctx context.Context, key session.Key, evs []*session.Event) error {
	for _, ev := range evs {
		if ev.Partial {
			return session.ErrPartialEvent
		}
	}
	out := make([]*session.Event, len(evs))
	for i, ev := range evs {
		out[i] = s.mangle(ev)
	}
	return s.Memory.AppendEvents(ctx, key, out)
}

// Regression (found in review, twenty-first session): the Service suite
// fails a backend whose stored events lose CutOff, Substituted,
// ShortCircuited, SameCall or EndInvocation.
//
// Before the fix: the Service suite checks an event's id, content, finish
// reason and turn flag, never the markers a resumed invocation reads back
// (CutOff, Substituted, ShortCircuited, SameCall, Actions.EndInvocation). A
// backend whose encoding drops them passes: on resume a degraded
// (substituted) answer is taken as the end, a cut-off output is sent back to
// the model, an EndInvocation event does not end the loop, and the model
// call budget is miscounted.
func TestServiceSuiteCatchesLostResumeMarkers(t *testing.T) {
	if os.Getenv(mutantEnv) == "" {
		s := lossyService{session.NewMemory(), "drops-markers"}
		k := session.Key{App: "a", UserID: "u", SessionID: "s"}
		ev := &session.Event{InvocationID: "i", Author: "support", Substituted: true,
			Content: model.NewTextContent(model.RoleModel, "degraded")}
		if err := s.AppendEvent(ctx, k, ev); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Get(ctx, k); got.Events[0].Substituted {
			t.Fatal("mutant sanity: the marker survived (the mutant must be broken)")
		}
	}
	runSuiteOnMutant(t, "drops-markers", "stored events lose CutOff/Substituted/ShortCircuited/SameCall/EndInvocation", func(t *testing.T) {
		sessiontest.Run(t, sessiontest.Factory{New: func(t *testing.T) session.Service {
			return lossyService{session.NewMemory(), "drops-markers"}
		}})
	})
}

// Regression (found in review, twenty-first session): the Service suite
// fails a backend that stores state values as their text.
//
// Before the fix: every state value the Service suite stores is a string, so
// a backend that stores values as their text passes: a counter 3 comes back
// "3", a flag true as "true", and a callback's type assertion on the state
// fails after the first reload.
func TestServiceSuiteCatchesStringifiedState(t *testing.T) {
	runSuiteOnMutant(t, "stringifies-state", "state values come back as strings (3 → \"3\", true → \"true\")", func(t *testing.T) {
		sessiontest.Run(t, sessiontest.Factory{New: func(t *testing.T) session.Service {
			return lossyService{session.NewMemory(), "stringifies-state"}
		}})
	})
}
