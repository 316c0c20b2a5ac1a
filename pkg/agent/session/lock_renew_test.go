package session_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// flakyLocker fails every Renew with a transient error while failing is set.
type flakyLocker struct {
	session.Locker
	failing atomic.Bool
	renews  atomic.Int32
}

var errTransient = errors.New("store unreachable")

func (f *flakyLocker) Renew(ctx context.Context, key session.Key, owner string, lease time.Duration) (*session.Lease, error) {
	f.renews.Add(1)
	if f.failing.Load() {
		return nil, errTransient
	}
	return f.Locker.Renew(ctx, key, owner, lease)
}

func TestKeepAliveStopLeaksNoGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := context.Background()
	l := session.NewMemoryLocker()
	k := session.Key{App: "support", UserID: "u1", SessionID: "s1"}
	for range 20 {
		lease, err := l.Acquire(ctx, k, "a", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		r := session.KeepAlive(ctx, l, lease, time.Millisecond)
		if err := r.Stop(); err != nil {
			t.Fatal(err)
		}
		if err := r.Stop(); err != nil { // idempotent
			t.Fatal(err)
		}
		if err := l.Release(ctx, k, "a"); err != nil {
			t.Fatal(err)
		}
	}
	// Ending the parent context stops the renewer too.
	cctx, cancel := context.WithCancel(ctx)
	lease, err := l.Acquire(ctx, k, "a", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r := session.KeepAlive(cctx, l, lease, 0)
	cancel()
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
}

func TestKeepAliveRidesOutTransientErrorsThenReportsExpiry(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := context.Background()
	l := &flakyLocker{Locker: session.NewMemoryLocker()}
	k := session.Key{App: "support", UserID: "u1", SessionID: "s1"}
	lease, err := l.Acquire(ctx, k, "a", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	l.failing.Store(true)
	r := session.KeepAlive(ctx, l, lease, 20*time.Millisecond)
	defer r.Stop()
	// A few failed renewals inside the lease are not a loss.
	for l.renews.Load() < 3 {
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case <-r.Lost():
		t.Fatalf("lost after transient errors inside the lease: %v", r.Err())
	default:
	}
	l.failing.Store(false)
	n := l.renews.Load()
	for l.renews.Load() < n+2 {
		time.Sleep(5 * time.Millisecond)
	}
	if !r.Lease().Expires.After(lease.Expires) {
		t.Fatalf("lease not renewed after recovery: %+v", r.Lease())
	}
	// Failing until the lease runs out is a loss.
	l.failing.Store(true)
	select {
	case <-r.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("renewer did not report the expired lease")
	}
	if err := r.Stop(); !errors.Is(err, errTransient) {
		t.Fatalf("Stop = %v, want the transient error wrapped", err)
	}
}

// hungLocker's renewals hang past their context's deadline, as a go-redis
// call does on a stalled connection, until release is closed.
type hungLocker struct {
	session.Locker
	release chan struct{}
	renews  atomic.Int32
}

func (h *hungLocker) Renew(context.Context, session.Key, string, time.Duration) (*session.Lease, error) {
	h.renews.Add(1)
	<-h.release
	return nil, errTransient
}

// A renewal that hangs does not keep the holder believing it holds the
// lock: Lost closes when the lease runs out, while the call still hangs
// (before, the renewer waited inside Renew and never noticed), and Stop
// still waits for that call, so nothing outlives it.
func TestKeepAliveReportsExpiryWhileARenewalHangs(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := context.Background()
	l := &hungLocker{Locker: session.NewMemoryLocker(), release: make(chan struct{})}
	k := session.Key{App: "support", UserID: "u1", SessionID: "s1"}
	lease, err := l.Acquire(ctx, k, "a", 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	r := session.KeepAlive(ctx, l, lease, 20*time.Millisecond)
	select {
	case <-r.Lost():
	case <-time.After(10 * time.Second):
		close(l.release)
		_ = r.Stop()
		t.Fatal("the lease ran out while a renewal hung, and the renewer did not report it")
	}
	if got := l.renews.Load(); got != 1 {
		t.Errorf("renewals started = %d, want 1 (one at a time)", got)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- r.Stop() }()
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while the renewal still hung", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(l.release)
	if err := <-stopped; err == nil {
		t.Fatal("Stop = nil after the lease was lost")
	}
}

// A renewer starts no goroutine before its first renewal is due: a holder
// that finishes within one interval costs a timer, not a goroutine and a
// ticker (a worker at 4,000 invocations in flight holds 4,000 renewers).
func TestKeepAliveStartsNoGoroutineBeforeTheFirstRenewal(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := context.Background()
	l := session.NewMemoryLocker()
	before := runtime.NumGoroutine()
	var rs []*session.Renewer
	for i := range 200 {
		k := session.Key{App: "support", UserID: "u1", SessionID: fmt.Sprint("s", i)}
		lease, err := l.Acquire(ctx, k, "a", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, session.KeepAlive(ctx, l, lease, 0))
	}
	if n := runtime.NumGoroutine() - before; n >= 100 {
		t.Errorf("200 renewers not yet due started %d goroutines", n)
	}
	for _, r := range rs {
		if err := r.Stop(); err != nil {
			t.Fatal(err)
		}
	}
}

// AfterLost runs its function once the lease is lost, with Err set; its
// stop, called before a loss, keeps it from running.
func TestAfterLost(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := context.Background()
	l := session.NewMemoryLocker()
	k := session.Key{App: "support", UserID: "u1", SessionID: "s1"}
	lease, err := l.Acquire(ctx, k, "a", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r := session.KeepAlive(ctx, l, lease, 10*time.Millisecond)
	lost := make(chan error, 1)
	r.AfterLost(func() { lost <- r.Err() })
	var ran atomic.Bool
	if !r.AfterLost(func() { ran.Store(true) })() {
		t.Fatal("stop of an AfterLost before any loss did not stop it")
	}
	// Another holder takes the session over: the next renewal is refused.
	if err := l.Release(ctx, k, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx, k, "b", time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-lost:
		if !errors.Is(err, session.ErrNotOwner) {
			t.Fatalf("Err after the loss = %v, want ErrNotOwner", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("AfterLost's function did not run after the lease was lost")
	}
	if err := r.Stop(); !errors.Is(err, session.ErrNotOwner) {
		t.Fatalf("Stop = %v, want ErrNotOwner", err)
	}
	if ran.Load() {
		t.Fatal("a stopped AfterLost function ran")
	}
}

// A lease handed to KeepAlive with less than one interval left (its Enter
// was slow) is reported lost at its end, not at the first renewal
// (review finding: the renewer that started at the first renewal reported
// it an interval late, an hour here, while another holder could take the
// session).
func TestKeepAliveReportsALeaseEndingBeforeTheFirstRenewal(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := context.Background()
	l := &flakyLocker{Locker: session.NewMemoryLocker()}
	k := session.Key{App: "support", UserID: "u1", SessionID: "s1"}
	lease, err := l.Acquire(ctx, k, "a", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	lease.Expires = time.Now().Add(50 * time.Millisecond) // the Enter took almost all of it
	r := session.KeepAlive(ctx, l, lease, 30*time.Minute)
	select {
	case <-r.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("a lease that ended before the first renewal was not reported lost")
	}
	if err := r.Stop(); err == nil {
		t.Fatal("Stop after the loss = nil, want why")
	}
	if n := l.renews.Load(); n != 0 {
		t.Fatalf("%d renewals tried; want none before the first interval", n)
	}
}
