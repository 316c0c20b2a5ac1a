package session

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Entry is what Gate.Enter did and found.
type Entry struct {
	// Lease is the held session lock, or nil when Enter does not know it
	// holds the lock: it failed before taking it, or the store's reply was
	// lost (the lock may then be held by owner until the lease ends; the
	// caller may Release it, which is fenced by owner). A non-nil Lease
	// must be released, also when Enter returned an error (the read or the
	// store failed after the lock was taken).
	Lease *Lease
	// Existing is the invocation's stored record; nil when there was none
	// and Enter stored the running record.
	Existing *Invocation
	// Session is the session as read under the lock in the same step, as
	// Service.GetOrCreate would return it; set only by
	// SessionGate.EnterWithSession, and only when it could read it (nil
	// means the caller loads the session itself).
	Session *Session
}

// SessionGate is a Gate that can also read the session in Enter's step
// (one round trip on Redis instead of two), for the runner to start from
// (agent.RunRequest.Session).
type SessionGate interface {
	Gate
	// EnterWithSession is Enter that also reads key's session from
	// sessions, after taking the lock and as GetOrCreate would, into
	// Entry.Session. It reads only when the lock was taken and sessions is
	// a store it can read in the same step (the one the gate was built
	// for); a session it cannot read or decode is left nil, never an error
	// of its own, so the caller's own load reports the problem as usual.
	EnterWithSession(ctx context.Context, key Key, owner string, lease time.Duration, running *Invocation, sessions Service) (*Entry, error)
}

// Gate is how a worker enters and leaves an invocation: the session lock and
// the invocation record together. A backend whose lock and records live on
// one server can do each step in one round trip (redissession.Gate); any
// Locker and InvocationStore pair can be used through NewGate, which makes
// the same calls one after another. Implementations must be safe for
// concurrent use, and pass sessiontest.RunGate.
type Gate interface {
	// Enter takes key's lock for owner, as Locker.Acquire (a held lock
	// gives a *LockedError and changes nothing), then reads the record of
	// invocation running.ID. With no record it stores running, as
	// InvocationStore.Transition would (running's Status must be
	// InvocationRunning; it is updated with the stored values), leaving
	// Entry.Existing nil. Otherwise Entry.Existing is the stored record
	// and nothing is stored: the caller decides, then calls Transition
	// itself. The Entry is never nil.
	Enter(ctx context.Context, key Key, owner string, lease time.Duration, running *Invocation) (*Entry, error)
	// Finish stores rec, as InvocationStore.Transition (with its
	// *InvocationCompletedError), and releases owner's lock of key, as
	// Locker.Release. released says whether the lock is known to be free
	// of owner now (released, or held by somebody else already); when it
	// is false the caller must still release it. err is the store's.
	Finish(ctx context.Context, rec *Invocation, key Key, owner string) (released bool, err error)
}

// NewGate returns a Gate that makes Locker and InvocationStore calls one
// after another: Enter is Acquire, Get and, for a new invocation,
// Transition; Finish is Transition then Release.
func NewGate(l Locker, s InvocationStore) Gate { return &seqGate{l: l, s: s} }

type seqGate struct {
	l Locker
	s InvocationStore
}

func (g *seqGate) Enter(ctx context.Context, key Key, owner string, lease time.Duration, running *Invocation) (*Entry, error) {
	if running == nil || running.Status != InvocationRunning {
		return &Entry{}, errors.New("session: gate: Enter needs a running record")
	}
	l, err := g.l.Acquire(ctx, key, owner, lease)
	if err != nil {
		return &Entry{}, err
	}
	e := &Entry{Lease: l}
	existing, err := g.s.Get(ctx, running.ID)
	switch {
	case errors.Is(err, ErrInvocationNotFound):
	case err != nil:
		return e, fmt.Errorf("read invocation record: %w", err)
	default:
		e.Existing = existing
		return e, nil
	}
	err = g.s.Transition(ctx, running)
	var ce *InvocationCompletedError
	if errors.As(err, &ce) {
		// Completed between the read and the write: only without the
		// lock's exclusion, but answer as if the read had seen it.
		e.Existing = ce.Current
		return e, nil
	}
	if err != nil {
		return e, fmt.Errorf("mark invocation running: %w", err)
	}
	return e, nil
}

func (g *seqGate) Finish(ctx context.Context, rec *Invocation, key Key, owner string) (bool, error) {
	err := g.s.Transition(ctx, rec)
	if rerr := g.l.Release(ctx, key, owner); rerr != nil && !errors.Is(rerr, ErrNotOwner) {
		return false, err
	}
	return true, err
}
