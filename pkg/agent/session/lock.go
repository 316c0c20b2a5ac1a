package session

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrLocked is matched (errors.Is) by a *LockedError: the session is held by
// another owner whose lease has not expired. The worker answers it with
// NakWithDelay: acquisition never blocks.
var ErrLocked = errors.New("session: locked by another invocation")

// ErrNotOwner is returned by Locker.Renew and Locker.Release when the caller
// does not hold the lock: it was never acquired, it was released, its lease
// expired, or another owner took it over after the expiry. A holder that
// sees ErrNotOwner has lost its exclusion and must stop at the next step
// boundary.
var ErrNotOwner = errors.New("session: lock not held by this owner")

// LockedError says who holds a session lock and until when. It matches
// ErrLocked with errors.Is.
type LockedError struct {
	// Key is the locked session.
	Key Key
	// Owner is the current holder's owner token.
	Owner string
	// Until is when the current lease ends unless it is renewed (as seen by
	// the backend; zero if unknown).
	Until time.Time
}

// Error implements error.
func (e *LockedError) Error() string {
	return fmt.Sprintf("session: %s/%s/%s locked by %q until %s",
		e.Key.App, e.Key.UserID, e.Key.SessionID, e.Owner, e.Until.UTC().Format(time.RFC3339Nano))
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// Lease is a held session lock.
type Lease struct {
	// Key is the locked session.
	Key Key
	// Owner is the holder's owner token; Renew and Release are fenced by it.
	Owner string
	// TTL is the lease duration the lock was acquired or last renewed with.
	TTL time.Duration
	// Expires is when the lease ends unless it is renewed, by the caller's
	// clock (an estimate: the backend decides).
	Expires time.Time
}

// Locker is a per-session lock with a lease, so two invocations of one
// session never interleave their events. Implementations must be safe for
// concurrent use.
//
// The owner token fences Renew and Release: it must be unique to one holder
// (for example the worker id plus the message's delivery, or a random
// UUID). Two callers that share an owner token share the lock. Acquire by
// the current owner succeeds and extends the lease, so an Acquire whose
// reply was lost can be retried.
type Locker interface {
	// Acquire takes the lock for owner for lease, without waiting. If
	// another owner holds an unexpired lease it returns a *LockedError
	// (errors.Is ErrLocked). An expired lease is taken over.
	Acquire(ctx context.Context, key Key, owner string, lease time.Duration) (*Lease, error)
	// Renew extends owner's lease to lease from now. It returns ErrNotOwner
	// if owner no longer holds the lock (including after expiry).
	Renew(ctx context.Context, key Key, owner string, lease time.Duration) (*Lease, error)
	// Release frees the lock if owner holds it, and returns ErrNotOwner
	// otherwise. It never frees another owner's lock.
	Release(ctx context.Context, key Key, owner string) error
}

// ValidateLockArgs checks a lock call's key and owner token, and a lease
// duration when the call takes one (Acquire, Renew: pass withLease true).
// Backends call it first.
func ValidateLockArgs(key Key, owner string, lease time.Duration, withLease bool) error {
	if err := key.Validate(); err != nil {
		return err
	}
	if owner == "" {
		return errors.New("session: lock owner token is empty")
	}
	if withLease && lease <= 0 {
		return fmt.Errorf("session: lock lease %v is not positive", lease)
	}
	return nil
}
