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

// LockerFactory returns a fresh Locker for one subtest. Reopen, when non-nil,
// returns a second Locker over the same storage as the last one New
// returned; in-memory backends leave it nil.
type LockerFactory struct {
	// New returns a Locker over fresh, empty storage.
	New func(t *testing.T) session.Locker
	// Reopen returns a second Locker over the storage of the last New.
	Reopen func(t *testing.T) session.Locker
}

// RunLocker runs the session lock conformance suite against f. Leases are
// short (up to two seconds), so the suite takes several seconds.
func RunLocker(t *testing.T, f LockerFactory) {
	t.Helper()
	t.Run("AcquireRejectsBadArguments", func(t *testing.T) { testLockArgs(t, f) })
	t.Run("ExactlyOneOfManyWins", func(t *testing.T) { testLockExclusion(t, f) })
	t.Run("SameOwnerReacquires", func(t *testing.T) { testLockReentrant(t, f) })
	t.Run("ReleaseFreesAndIsFenced", func(t *testing.T) { testLockRelease(t, f) })
	t.Run("TakeoverAfterExpiryFencesStaleOwner", func(t *testing.T) { testLockTakeover(t, f) })
	t.Run("ExactlyOneTakesOverAnExpiredLease", func(t *testing.T) { testLockTakeoverRace(t, f) })
	t.Run("RenewExtendsLease", func(t *testing.T) { testLockRenew(t, f) })
	t.Run("KeepAliveHoldsAndDetectsLoss", func(t *testing.T) { testLockKeepAlive(t, f) })
	t.Run("KeysAreIsolatedAndEscaped", func(t *testing.T) { testLockIsolation(t, f) })
	if f.Reopen != nil {
		t.Run("SurvivesReopen", func(t *testing.T) { testLockReopen(t, f) })
	}
}

// waitFor polls cond every 10ms until it returns true or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func wantLocked(t *testing.T, err error, owner string) {
	t.Helper()
	var le *session.LockedError
	if !errors.Is(err, session.ErrLocked) || !errors.As(err, &le) {
		t.Fatalf("error = %v, want a *LockedError matching ErrLocked", err)
	}
	if le.Owner != owner {
		t.Fatalf("LockedError.Owner = %q, want %q", le.Owner, owner)
	}
	if !le.Until.After(time.Now().Add(-time.Second)) {
		t.Fatalf("LockedError.Until = %v, want a time near or after now", le.Until)
	}
}

func testLockArgs(t *testing.T, f LockerFactory) {
	l := f.New(t)
	ctx := context.Background()
	k := key(t, "args")
	if _, err := l.Acquire(ctx, session.Key{App: "a"}, "o", time.Second); err == nil {
		t.Fatal("Acquire with an incomplete key succeeded")
	}
	if _, err := l.Acquire(ctx, k, "", time.Second); err == nil {
		t.Fatal("Acquire with an empty owner succeeded")
	}
	if _, err := l.Acquire(ctx, k, "o", 0); err == nil {
		t.Fatal("Acquire with a zero lease succeeded")
	}
	if err := l.Release(ctx, k, "o"); !errors.Is(err, session.ErrNotOwner) {
		t.Fatalf("Release of a lock never taken: %v, want ErrNotOwner", err)
	}
	if _, err := l.Renew(ctx, k, "o", time.Second); !errors.Is(err, session.ErrNotOwner) {
		t.Fatalf("Renew of a lock never taken: %v, want ErrNotOwner", err)
	}
}

func testLockExclusion(t *testing.T, f LockerFactory) {
	l := f.New(t)
	ctx := context.Background()
	k := key(t, "exclusion")
	const n = 16
	winners, losers := raceAcquire(ctx, l, k, n)
	if len(winners) != 1 {
		t.Fatalf("%d owners acquired the lock (%v), want exactly 1; other errors: %v", len(winners), winners, losers)
	}
	for _, err := range losers {
		wantLocked(t, err, winners[0])
	}
}

func testLockReentrant(t *testing.T, f LockerFactory) {
	l := f.New(t)
	ctx := context.Background()
	k := key(t, "reentrant")
	first, err := l.Acquire(ctx, k, "a", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if first.Owner != "a" || first.Key != k || first.TTL != time.Second || !first.Expires.After(time.Now()) {
		t.Fatalf("lease = %+v", first)
	}
	second, err := l.Acquire(ctx, k, "a", 30*time.Second)
	if err != nil {
		t.Fatalf("re-acquire by the owner: %v", err)
	}
	if !second.Expires.After(first.Expires) {
		t.Fatalf("re-acquire did not extend the lease: %v then %v", first.Expires, second.Expires)
	}
	// The extended lease outlives the first one.
	waitFor(t, 5*time.Second, "the first lease to end", func() bool { return time.Now().After(first.Expires.Add(100 * time.Millisecond)) })
	_, err = l.Acquire(ctx, k, "b", time.Second)
	wantLocked(t, err, "a")
}

func testLockRelease(t *testing.T, f LockerFactory) {
	l := f.New(t)
	ctx := context.Background()
	k := key(t, "release")
	if _, err := l.Acquire(ctx, k, "a", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx, k, "b"); !errors.Is(err, session.ErrNotOwner) {
		t.Fatalf("Release by a non-owner: %v, want ErrNotOwner", err)
	}
	if _, err := l.Renew(ctx, k, "b", time.Second); !errors.Is(err, session.ErrNotOwner) {
		t.Fatalf("Renew by a non-owner: %v, want ErrNotOwner", err)
	}
	_, err := l.Acquire(ctx, k, "b", time.Second)
	wantLocked(t, err, "a")
	if err := l.Release(ctx, k, "a"); err != nil {
		t.Fatalf("Release by the owner: %v", err)
	}
	if err := l.Release(ctx, k, "a"); !errors.Is(err, session.ErrNotOwner) {
		t.Fatalf("second Release: %v, want ErrNotOwner", err)
	}
	if _, err := l.Acquire(ctx, k, "b", 30*time.Second); err != nil {
		t.Fatalf("Acquire after release: %v", err)
	}
	if _, err := l.Renew(ctx, k, "a", time.Second); !errors.Is(err, session.ErrNotOwner) {
		t.Fatalf("Renew by the released owner: %v, want ErrNotOwner", err)
	}
}

func testLockTakeover(t *testing.T, f LockerFactory) {
	l := f.New(t)
	ctx := context.Background()
	k := key(t, "takeover")
	const lease = time.Second
	if _, err := l.Acquire(ctx, k, "stale", lease); err != nil {
		t.Fatal(err)
	}
	_, err := l.Acquire(ctx, k, "fresh", 30*time.Second)
	wantLocked(t, err, "stale")
	var got *session.Lease
	waitFor(t, 10*time.Second, "takeover after lease expiry", func() bool {
		got, err = l.Acquire(ctx, k, "fresh", 30*time.Second)
		if err != nil && !errors.Is(err, session.ErrLocked) {
			t.Fatalf("Acquire during takeover: %v", err)
		}
		return err == nil
	})
	if got.Owner != "fresh" {
		t.Fatalf("takeover lease = %+v", got)
	}
	if _, err := l.Renew(ctx, k, "stale", 30*time.Second); !errors.Is(err, session.ErrNotOwner) {
		t.Fatalf("stale owner Renew after takeover: %v, want ErrNotOwner", err)
	}
	if err := l.Release(ctx, k, "stale"); !errors.Is(err, session.ErrNotOwner) {
		t.Fatalf("stale owner Release after takeover: %v, want ErrNotOwner", err)
	}
	if _, err := l.Acquire(ctx, k, "stale", lease); err == nil {
		t.Fatal("stale owner re-acquired a lock taken over")
	} else {
		wantLocked(t, err, "fresh")
	}
	if _, err := l.Renew(ctx, k, "fresh", 30*time.Second); err != nil {
		t.Fatalf("new owner Renew: %v", err)
	}
	if err := l.Release(ctx, k, "fresh"); err != nil {
		t.Fatalf("new owner Release: %v", err)
	}
}

// testLockTakeoverRace: many owners that find a crashed owner's lease
// expired race to take it over; exactly one wins and every other is told
// (a *LockedError) that the winner holds it. A takeover that reads the
// expired lease and then writes without checking that nobody wrote in
// between lets two workers into one session.
func testLockTakeoverRace(t *testing.T, f LockerFactory) {
	l := f.New(t)
	ctx := context.Background()
	k := key(t, "takeover-race")
	const n = 16
	crashed, err := l.Acquire(ctx, k, "crashed", 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the crashed owner's lease to end", func() bool { return time.Now().After(crashed.Expires) })
	// The contenders must all find the lease ended, also by the backend's
	// clock: a Renew of it fails once it has (and while it has not, renews
	// it for a millisecond only).
	waitFor(t, 10*time.Second, "the backend to see the crashed owner's lease end", func() bool {
		_, err := l.Renew(ctx, k, "crashed", time.Millisecond)
		if err != nil && !errors.Is(err, session.ErrNotOwner) {
			t.Fatalf("Renew of the crashed owner's lease: %v", err)
		}
		return err != nil
	})
	winners, losers := raceAcquire(ctx, l, k, n)
	if len(winners) != 1 {
		t.Fatalf("%d owners took over the expired lease (%v), want exactly 1; other errors: %v", len(winners), winners, losers)
	}
	for _, err := range losers {
		wantLocked(t, err, winners[0])
	}
	if _, err := l.Renew(ctx, k, winners[0], 30*time.Second); err != nil {
		t.Fatalf("the winner's Renew: %v", err)
	}
}

func testLockRenew(t *testing.T, f LockerFactory) {
	l := f.New(t)
	ctx := context.Background()
	k := key(t, "renew")
	first, err := l.Acquire(ctx, k, "a", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	renewed, err := l.Renew(ctx, k, "a", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if renewed.Owner != "a" || renewed.TTL != 30*time.Second || !renewed.Expires.After(first.Expires) {
		t.Fatalf("renewed lease = %+v (first %+v)", renewed, first)
	}
	waitFor(t, 5*time.Second, "the first lease to end", func() bool { return time.Now().After(first.Expires.Add(100 * time.Millisecond)) })
	_, err = l.Acquire(ctx, k, "b", time.Second)
	wantLocked(t, err, "a")

	// A lease that ran out cannot be renewed, even if nobody took it over.
	short, err := l.Renew(ctx, k, "a", 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the short lease to end", func() bool { return time.Now().After(short.Expires.Add(100 * time.Millisecond)) })
	if _, err := l.Renew(ctx, k, "a", 30*time.Second); !errors.Is(err, session.ErrNotOwner) {
		t.Fatalf("Renew after expiry: %v, want ErrNotOwner", err)
	}
}

func testLockKeepAlive(t *testing.T, f LockerFactory) {
	l := f.New(t)
	ctx := context.Background()
	k := key(t, "keepalive")
	// Renewing every twentieth of a two-second lease keeps the test stable
	// on a loaded machine (the renewer must be starved for 1.9 s to lose).
	const lease = 2 * time.Second
	first, err := l.Acquire(ctx, k, "a", lease)
	if err != nil {
		t.Fatal(err)
	}
	r := session.KeepAlive(ctx, l, first, lease/20)
	// Held for half a lease past the first lease's end, checked every
	// tenth of a lease (a renewer that renewed once, or stopped early,
	// is caught).
	deadline := first.Expires.Add(lease / 2)
	for time.Now().Before(deadline) {
		_, err := l.Acquire(ctx, k, "b", lease)
		wantLocked(t, err, "a")
		time.Sleep(lease / 10)
	}
	select {
	case <-r.Lost():
		t.Fatalf("lease lost while renewing: %v", r.Err())
	default:
	}
	if err := r.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if !r.Lease().Expires.After(first.Expires) {
		t.Fatalf("renewer never renewed: %+v", r.Lease())
	}

	// After Stop the lease runs out and another owner takes over. The
	// holder shortens it first, to keep the wait short: a renewer still
	// running after Stop would extend it again for the whole lease, every
	// twentieth of it, and nobody could take over.
	if _, err := l.Renew(ctx, k, "a", 200*time.Millisecond); err != nil {
		t.Fatalf("Renew after Stop: %v", err)
	}
	waitFor(t, 10*time.Second, "takeover after Stop", func() bool {
		_, err := l.Acquire(ctx, k, "b", 30*time.Second)
		return err == nil
	})

	// A renewer whose lock was taken over reports the loss.
	k2 := key(t, "keepalive-lost")
	held, err := l.Acquire(ctx, k2, "a", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx, k2, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx, k2, "b", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	r = session.KeepAlive(ctx, l, held, 20*time.Millisecond)
	select {
	case <-r.Lost():
	case <-time.After(10 * time.Second):
		r.Stop()
		t.Fatal("renewer did not report the lost lease")
	}
	if err := r.Stop(); !errors.Is(err, session.ErrNotOwner) {
		t.Fatalf("Stop after loss = %v, want ErrNotOwner", err)
	}
}

func testLockIsolation(t *testing.T, f LockerFactory) {
	l := f.New(t)
	ctx := context.Background()
	// Keys that would collide if ':' (or '/', '.') were joined unescaped.
	keys := []session.Key{
		{App: "a:b", UserID: "c", SessionID: "d"},
		{App: "a", UserID: "b:c", SessionID: "d"},
		{App: "a.b", UserID: "c", SessionID: "d"},
		{App: "a", UserID: "b.c", SessionID: "d"},
		{App: "a/b", UserID: "c", SessionID: "d"},
		{App: "a", UserID: "b/c", SessionID: "d"},
		{App: "a", UserID: "b", SessionID: "c:d"},
		{App: "a", UserID: "b", SessionID: "c d %3A ü *>"},
	}
	for i, k := range keys {
		if _, err := l.Acquire(ctx, k, fmt.Sprintf("owner-%d", i), 30*time.Second); err != nil {
			t.Fatalf("key %d %+v: %v", i, k, err)
		}
	}
	for i, k := range keys {
		_, err := l.Acquire(ctx, k, "other", time.Second)
		wantLocked(t, err, fmt.Sprintf("owner-%d", i))
	}
}

func testLockReopen(t *testing.T, f LockerFactory) {
	l := f.New(t)
	ctx := context.Background()
	k := key(t, "reopen")
	if _, err := l.Acquire(ctx, k, "a", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	again := f.Reopen(t)
	_, err := again.Acquire(ctx, k, "b", time.Second)
	wantLocked(t, err, "a")
	if err := again.Release(ctx, k, "a"); err != nil {
		t.Fatalf("Release through the reopened locker: %v", err)
	}
	if _, err := l.Acquire(ctx, k, "b", time.Second); err != nil {
		t.Fatalf("Acquire after release through the reopened locker: %v", err)
	}
}

// raceAcquire has n owners ("owner-0"...) Acquire k at once and returns
// who won and the losers' errors.
func raceAcquire(ctx context.Context, l session.Locker, k session.Key, n int) (winners []string, losers []error) {
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			owner := fmt.Sprintf("owner-%d", i)
			<-start
			_, err := l.Acquire(ctx, k, owner, 30*time.Second)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				winners = append(winners, owner)
			} else {
				losers = append(losers, err)
			}
		})
	}
	close(start)
	wg.Wait()
	return winners, losers
}
