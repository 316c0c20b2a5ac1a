package sessiontest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// InvocationFactory returns a fresh InvocationStore for one subtest, keeping
// records for retention. Reopen, when non-nil, returns a second store over
// the same storage as the last one New returned; in-memory backends leave it
// nil.
type InvocationFactory struct {
	// New returns a store over fresh, empty storage keeping records for
	// retention.
	New func(t *testing.T, retention time.Duration) session.InvocationStore
	// Reopen returns a second store over the storage of the last New.
	Reopen func(t *testing.T) session.InvocationStore
}

// RunInvocations runs the invocation status conformance suite against f.
func RunInvocations(t *testing.T, f InvocationFactory) {
	t.Helper()
	t.Run("GetMissingIsNotFound", func(t *testing.T) { testInvGetMissing(t, f) })
	t.Run("RejectsBadRecords", func(t *testing.T) { testInvBadRecords(t, f) })
	t.Run("Lifecycle", func(t *testing.T) { testInvLifecycle(t, f) })
	t.Run("CompletedIsFinal", func(t *testing.T) { testInvCompletedFinal(t, f) })
	t.Run("FailedAndDeadLetteredRunAgain", func(t *testing.T) { testInvReplay(t, f) })
	t.Run("ConcurrentCompletionsOneWins", func(t *testing.T) { testInvConcurrent(t, f) })
	t.Run("RacingTransitionsNeverOverwriteCompleted", func(t *testing.T) { testInvRaceCompleted(t, f) })
	t.Run("IDsAreIsolated", func(t *testing.T) { testInvIsolation(t, f) })
	t.Run("Retention", func(t *testing.T) { testInvRetention(t, f) })
	t.Run("TransitionRestartsRetention", func(t *testing.T) { testInvRetentionRestart(t, f) })
	if f.Reopen != nil {
		t.Run("SurvivesReopen", func(t *testing.T) { testInvReopen(t, f) })
	}
}

const longRetention = time.Hour

func transition(t *testing.T, s session.InvocationStore, rec *session.Invocation) *session.Invocation {
	t.Helper()
	if err := s.Transition(context.Background(), rec); err != nil {
		t.Fatalf("Transition(%s → %s): %v", rec.ID, rec.Status, err)
	}
	return rec
}

func get(t *testing.T, s session.InvocationStore, id string) *session.Invocation {
	t.Helper()
	rec, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return rec
}

func testInvGetMissing(t *testing.T, f InvocationFactory) {
	s := f.New(t, longRetention)
	if _, err := s.Get(context.Background(), "missing"); !errors.Is(err, session.ErrInvocationNotFound) {
		t.Fatalf("Get(missing) = %v, want ErrInvocationNotFound", err)
	}
}

func testInvBadRecords(t *testing.T, f InvocationFactory) {
	s := f.New(t, longRetention)
	ctx := context.Background()
	for name, rec := range map[string]*session.Invocation{
		"no id":          {Status: session.InvocationRunning},
		"no status":      {ID: "i1"},
		"unknown status": {ID: "i1", Status: "paused"},
		"result not json": {ID: "i1", Status: session.InvocationCompleted,
			Result: json.RawMessage(`{"v":`)},
	} {
		if err := s.Transition(ctx, rec); err == nil {
			t.Fatalf("%s: Transition succeeded", name)
		}
	}
	if _, err := s.Get(ctx, "i1"); !errors.Is(err, session.ErrInvocationNotFound) {
		t.Fatalf("a rejected record was stored: %v", err)
	}
}

func testInvLifecycle(t *testing.T, f InvocationFactory) {
	s := f.New(t, longRetention)
	sk := key(t, "s1")
	before := time.Now().Add(-time.Second)
	r1 := transition(t, s, &session.Invocation{ID: "inv-1", Session: sk, Status: session.InvocationRunning})
	if r1.Attempts != 1 || r1.CreatedAt.Before(before) || r1.UpdatedAt.IsZero() || !r1.FinishedAt.IsZero() {
		t.Fatalf("first running record = %+v", r1)
	}
	got := get(t, s, "inv-1")
	if got.Status != session.InvocationRunning || got.Attempts != 1 || got.Session != sk ||
		!got.CreatedAt.Equal(r1.CreatedAt) || !got.UpdatedAt.Equal(r1.UpdatedAt) {
		t.Fatalf("Get = %+v, want %+v", got, r1)
	}

	r2 := transition(t, s, &session.Invocation{ID: "inv-1", Session: sk, Status: session.InvocationRunning})
	if r2.Attempts != 2 || !r2.CreatedAt.Equal(r1.CreatedAt) || r2.UpdatedAt.Before(r1.UpdatedAt) {
		t.Fatalf("second running record = %+v (first %+v)", r2, r1)
	}

	result := json.RawMessage(`{"v":1,"invocation_id":"inv-1","status":"completed","content":"done, A-1042 refunded"}`)
	r3 := transition(t, s, &session.Invocation{ID: "inv-1", Session: sk, Status: session.InvocationCompleted, Result: result})
	if r3.Attempts != 2 || r3.FinishedAt.IsZero() || !r3.CreatedAt.Equal(r1.CreatedAt) {
		t.Fatalf("completed record = %+v", r3)
	}
	got = get(t, s, "inv-1")
	if got.Status != session.InvocationCompleted || got.Attempts != 2 || got.Session != sk ||
		!got.FinishedAt.Equal(r3.FinishedAt) || !got.CreatedAt.Equal(r1.CreatedAt) {
		t.Fatalf("Get after completion = %+v", got)
	}
	if string(got.Result) != string(result) {
		t.Fatalf("result = %s, want %s", got.Result, result)
	}
}

func testInvCompletedFinal(t *testing.T, f InvocationFactory) {
	s := f.New(t, longRetention)
	ctx := context.Background()
	transition(t, s, &session.Invocation{ID: "inv-1", Status: session.InvocationRunning})
	done := transition(t, s, &session.Invocation{ID: "inv-1", Status: session.InvocationCompleted, Result: json.RawMessage(`{"n":1}`)})
	for _, st := range []session.InvocationStatus{session.InvocationRunning, session.InvocationCompleted,
		session.InvocationFailed, session.InvocationDeadLettered} {
		err := s.Transition(ctx, &session.Invocation{ID: "inv-1", Status: st, Result: json.RawMessage(`{"n":2}`)})
		var ce *session.InvocationCompletedError
		if !errors.Is(err, session.ErrInvocationCompleted) || !errors.As(err, &ce) {
			t.Fatalf("completed → %s: %v, want *InvocationCompletedError", st, err)
		}
		if ce.Current.Status != session.InvocationCompleted || string(ce.Current.Result) != `{"n":1}` || ce.Current.ID != "inv-1" {
			t.Fatalf("completed error carries %+v", ce.Current)
		}
	}
	got := get(t, s, "inv-1")
	if got.Status != session.InvocationCompleted || string(got.Result) != `{"n":1}` || got.Attempts != 1 ||
		!got.UpdatedAt.Equal(done.UpdatedAt) {
		t.Fatalf("completed record changed: %+v", got)
	}
}

func testInvReplay(t *testing.T, f InvocationFactory) {
	s := f.New(t, longRetention)
	for _, st := range []session.InvocationStatus{session.InvocationFailed, session.InvocationDeadLettered} {
		id := "inv-" + string(st)
		transition(t, s, &session.Invocation{ID: id, Status: session.InvocationRunning})
		bad := transition(t, s, &session.Invocation{ID: id, Status: st, Error: "RATE_LIMITED after retries"})
		if bad.FinishedAt.IsZero() || bad.Attempts != 1 {
			t.Fatalf("%s record = %+v", st, bad)
		}
		got := get(t, s, id)
		if got.Status != st || got.Error != "RATE_LIMITED after retries" {
			t.Fatalf("Get = %+v", got)
		}
		again := transition(t, s, &session.Invocation{ID: id, Status: session.InvocationRunning})
		if again.Attempts != 2 || !again.FinishedAt.IsZero() || again.Error != "" {
			t.Fatalf("replayed record = %+v", again)
		}
		transition(t, s, &session.Invocation{ID: id, Status: session.InvocationCompleted, Result: json.RawMessage(`"ok"`)})
		if got := get(t, s, id); got.Status != session.InvocationCompleted || got.Attempts != 2 || string(got.Result) != `"ok"` {
			t.Fatalf("after replay = %+v", got)
		}
	}
	// A record may start in a terminal status (bad input dead-lettered
	// before anything ran).
	dl := transition(t, s, &session.Invocation{ID: "inv-bad-input", Status: session.InvocationDeadLettered})
	if dl.Attempts != 0 || dl.FinishedAt.IsZero() {
		t.Fatalf("dead-lettered before running = %+v", dl)
	}
}

func testInvConcurrent(t *testing.T, f InvocationFactory) {
	s := f.New(t, longRetention)
	ctx := context.Background()
	transition(t, s, &session.Invocation{ID: "inv-1", Status: session.InvocationRunning})
	const n = 12
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		won  []string
		errs []error
	)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := json.RawMessage(fmt.Sprintf(`{"writer":%d}`, i))
			<-start
			err := s.Transition(ctx, &session.Invocation{ID: "inv-1", Status: session.InvocationCompleted, Result: res})
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				won = append(won, string(res))
			} else {
				errs = append(errs, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(won) != 1 {
		t.Fatalf("%d completions stored (%v), want 1; errors: %v", len(won), won, errs)
	}
	for _, err := range errs {
		if !errors.Is(err, session.ErrInvocationCompleted) {
			t.Fatalf("losing completion: %v, want ErrInvocationCompleted", err)
		}
	}
	if got := get(t, s, "inv-1"); string(got.Result) != won[0] {
		t.Fatalf("stored result %s, winner %s", got.Result, won[0])
	}
}

// testInvRaceCompleted: running, failed and dead_lettered transitions that
// race a completion of the same invocation never overwrite it. Each either
// lands before the completion (and succeeds) or finds it and fails with
// ErrInvocationCompleted; the record ends completed with the completion's
// result. A backend that checks "not completed" in one round trip and
// writes in another lets a redelivery's running (or a stale worker's
// dead_lettered) undo a completion, and the invocation runs again. The
// completion starts at staggered moments after the others, so that one
// round lands it between some transition's read and its write.
func testInvRaceCompleted(t *testing.T, f InvocationFactory) {
	s := f.New(t, longRetention)
	ctx := context.Background()
	others := []session.InvocationStatus{session.InvocationRunning, session.InvocationDeadLettered, session.InvocationFailed}
	for round, delay := range []time.Duration{0, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 15 * time.Millisecond} {
		id := fmt.Sprintf("inv-race-%d", round)
		transition(t, s, &session.Invocation{ID: id, Status: session.InvocationRunning})
		result := json.RawMessage(fmt.Sprintf(`{"round":%d}`, round))
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			failures []string
		)
		start := make(chan struct{})
		for i := range 3 * len(others) {
			st := others[i%len(others)]
			wg.Go(func() {
				<-start
				err := s.Transition(ctx, &session.Invocation{ID: id, Status: st, Error: "raced"})
				if err != nil && !errors.Is(err, session.ErrInvocationCompleted) {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%s: %v, want success or ErrInvocationCompleted", st, err))
					mu.Unlock()
				}
			})
		}
		wg.Go(func() {
			<-start
			time.Sleep(delay)
			if err := s.Transition(ctx, &session.Invocation{ID: id, Status: session.InvocationCompleted, Result: result}); err != nil {
				mu.Lock()
				failures = append(failures, fmt.Sprintf("the completion: %v", err))
				mu.Unlock()
			}
		})
		close(start)
		wg.Wait()
		if len(failures) > 0 {
			t.Fatalf("round %d (completion after %v): %v", round, delay, failures)
		}
		if got := get(t, s, id); got.Status != session.InvocationCompleted || string(got.Result) != string(result) || got.FinishedAt.IsZero() {
			t.Fatalf("round %d (completion after %v): stored %+v; want completed with %s (a racing transition overwrote the completion)", round, delay, got, result)
		}
	}
}

func testInvIsolation(t *testing.T, f InvocationFactory) {
	s := f.New(t, longRetention)
	ids := []string{"a:b", "a.b", "a/b", "a_b", "A:B", "a b ü *>"}
	for _, id := range ids {
		transition(t, s, &session.Invocation{ID: id, Status: session.InvocationFailed, Error: id})
	}
	for _, id := range ids {
		if got := get(t, s, id); got.ID != id || got.Error != id {
			t.Fatalf("Get(%q) = %+v", id, got)
		}
	}
}

func testInvRetention(t *testing.T, f InvocationFactory) {
	s := f.New(t, time.Second)
	ctx := context.Background()
	transition(t, s, &session.Invocation{ID: "inv-1", Status: session.InvocationRunning})
	transition(t, s, &session.Invocation{ID: "inv-1", Status: session.InvocationCompleted, Result: json.RawMessage(`{}`)})
	stored := time.Now()
	if got := get(t, s, "inv-1"); got.Status != session.InvocationCompleted {
		t.Fatalf("record before retention = %+v", got)
	}
	waitFor(t, 15*time.Second, "the record to pass retention", func() bool {
		_, err := s.Get(ctx, "inv-1")
		if err != nil && !errors.Is(err, session.ErrInvocationNotFound) {
			t.Fatalf("Get during retention wait: %v", err)
		}
		return errors.Is(err, session.ErrInvocationNotFound)
	})
	if elapsed := time.Since(stored); elapsed < 900*time.Millisecond {
		t.Fatalf("record dropped after %v, before its 1s retention", elapsed)
	}
	// Once dropped the id starts afresh.
	if r := transition(t, s, &session.Invocation{ID: "inv-1", Status: session.InvocationRunning}); r.Attempts != 1 {
		t.Fatalf("record after retention = %+v", r)
	}
}

// testInvRetentionRestart: the retention runs from a record's last
// transition, not from its creation: a record created running and completed
// half a retention later is still there after the creation's retention
// would have ended. A backend that sets the expiry only when it creates
// the record drops a late completion early, and a redelivery or replay
// then runs the invocation again. A Get that ends too near the
// completion's own retention proves nothing, so the scenario is tried again
// (up to three times) with a new id.
func testInvRetentionRestart(t *testing.T, f InvocationFactory) {
	const retention = time.Second
	s := f.New(t, retention)
	ctx := context.Background()
	for attempt := range 3 {
		id := fmt.Sprintf("inv-restart-%d", attempt)
		transition(t, s, &session.Invocation{ID: id, Status: session.InvocationRunning})
		created := time.Now() // the creation's retention ends before created+retention
		time.Sleep(retention / 2)
		completing := time.Now() // the completion's retention ends after completing+retention
		transition(t, s, &session.Invocation{ID: id, Status: session.InvocationCompleted, Result: json.RawMessage(`{}`)})
		time.Sleep(time.Until(created.Add(retention + 150*time.Millisecond)))
		rec, err := s.Get(ctx, id)
		if err != nil && !errors.Is(err, session.ErrInvocationNotFound) {
			t.Fatalf("Get: %v", err)
		}
		// Allow a backend's expiry to be early by a tenth (as Retention does).
		if time.Now().After(completing.Add(retention * 9 / 10)) {
			t.Logf("attempt %d: the Get ended %v after the completion, too late to tell; trying again", attempt, time.Since(completing))
			continue
		}
		if err != nil {
			t.Fatalf("record completed %v ago (retention %v) is gone, %v after its creation: the completion did not restart the retention",
				time.Since(completing), retention, time.Since(created))
		}
		if rec.Status != session.InvocationCompleted {
			t.Fatalf("record = %+v, want completed", rec)
		}
		return
	}
	t.Skip("the machine is too slow to time a one-second retention")
}

func testInvReopen(t *testing.T, f InvocationFactory) {
	s := f.New(t, longRetention)
	transition(t, s, &session.Invocation{ID: "inv-1", Status: session.InvocationRunning})
	transition(t, s, &session.Invocation{ID: "inv-1", Status: session.InvocationCompleted, Result: json.RawMessage(`{"ok":true}`)})
	again := f.Reopen(t)
	got := get(t, again, "inv-1")
	if got.Status != session.InvocationCompleted || string(got.Result) != `{"ok":true}` || got.Attempts != 1 {
		t.Fatalf("reopened record = %+v", got)
	}
	if err := again.Transition(context.Background(), &session.Invocation{ID: "inv-1", Status: session.InvocationRunning}); !errors.Is(err, session.ErrInvocationCompleted) {
		t.Fatalf("reopened store accepted a transition out of completed: %v", err)
	}
}
