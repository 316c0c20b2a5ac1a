package natssession

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/kvbucket"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// Locker is a session.Locker on a NATS KV bucket. A lock entry holds the
// owner token and the lease duration; the lease ends that long after the
// entry's server timestamp. Every change is a Create or a revision-checked
// Update or Delete, so of two contenders exactly one wins. It is safe for
// concurrent use.
type Locker struct {
	kv  jetstream.KeyValue
	js  jetstream.JetStream // loadFromLeader's
	cfg Config
	now func() time.Time
}

var _ session.Locker = (*Locker)(nil)

// lockDoc is a lock entry's value.
type lockDoc struct {
	Owner   string `json:"owner"`
	LeaseMS int64  `json:"lease_ms"`
}

// lockEntry is a decoded lock entry.
type lockEntry struct {
	lockDoc
	rev     uint64
	expires time.Time
}

// NewLocker opens the lock bucket on js (creating or updating it unless
// cfg.OpenExisting). cfg gets its defaults and is validated.
func NewLocker(ctx context.Context, js jetstream.JetStream, cfg Config) (*Locker, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	kv, ttl, err := openBucket(ctx, js, cfg, cfg.LockBucket, "agentfleet session locks: owner and lease per session", cfg.LockMaxAge, 0, kvbucket.Configure)
	if err != nil {
		return nil, err
	}
	switch {
	case ttl > 0:
		cfg.LockMaxAge = ttl // an existing bucket opened as it is: leases may not exceed its max age
	case cfg.OpenExisting:
		cfg.LockMaxAge = math.MaxInt64 // a bucket without a max age caps no lease
	}
	return &Locker{kv: kv, js: js, cfg: cfg, now: time.Now}, nil
}

// MaxLease is the longest lease Acquire and Renew accept: the lock bucket's
// max age (an existing bucket's own), which would otherwise remove a held
// lock.
func (l *Locker) MaxLease() time.Duration { return l.cfg.LockMaxAge }

// Acquire implements session.Locker.
func (l *Locker) Acquire(ctx context.Context, key session.Key, owner string, lease time.Duration) (*session.Lease, error) {
	if err := l.checkArgs(key, owner, lease, true); err != nil {
		return nil, err
	}
	k, err := sessionKey(key)
	if err != nil {
		return nil, err
	}
	val, err := encodeLock(owner, lease)
	if err != nil {
		return nil, err
	}
	for n := range l.cfg.MaxConflictRetries {
		start := l.now()
		cur, err := l.load(ctx, k) // a stale read only makes the Create or Update below fail
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			_, err = l.kv.Create(ctx, k, val)
		case err != nil:
			return nil, fmt.Errorf("natssession: acquire lock %v: %w", key, err)
		case cur.Owner != owner && start.Before(cur.expires):
			return nil, &session.LockedError{Key: key, Owner: cur.Owner, Until: cur.expires}
		default: // ours already, or expired: take it (over)
			_, err = l.kv.Update(ctx, k, val, cur.rev)
		}
		if err == nil {
			return &session.Lease{Key: key, Owner: owner, TTL: lease, Expires: start.Add(lease)}, nil
		}
		if !isConflict(err) {
			return nil, fmt.Errorf("natssession: acquire lock %v: %w", key, err)
		}
		if err := backoff(ctx, n); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("natssession: acquire lock %v: %w", key, ErrTooManyConflicts)
}

// Renew implements session.Locker.
func (l *Locker) Renew(ctx context.Context, key session.Key, owner string, lease time.Duration) (*session.Lease, error) {
	if err := l.checkArgs(key, owner, lease, true); err != nil {
		return nil, err
	}
	k, err := sessionKey(key)
	if err != nil {
		return nil, err
	}
	val, err := encodeLock(owner, lease)
	if err != nil {
		return nil, err
	}
	for n := range l.cfg.MaxConflictRetries {
		start := l.now()
		cur, err := l.load(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) || err == nil && (cur.Owner != owner || !start.Before(cur.expires)) {
			// A direct get may be answered by a replica behind the
			// holder's last write: the holder is told it lost the lock
			// only when the leader says so too.
			cur, err = l.loadFromLeader(ctx, k, func(e *lockEntry) bool {
				return e == nil || e.Owner != owner || !start.Before(e.expires)
			})
		}
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			return nil, fmt.Errorf("natssession: renew lock %v for %q: not held: %w", key, owner, session.ErrNotOwner)
		case err != nil:
			return nil, fmt.Errorf("natssession: renew lock %v: %w", key, err)
		case cur.Owner != owner:
			return nil, fmt.Errorf("natssession: renew lock %v for %q: held by %q: %w", key, owner, cur.Owner, session.ErrNotOwner)
		case !start.Before(cur.expires):
			return nil, fmt.Errorf("natssession: renew lock %v for %q: lease expired at %s: %w", key, owner, cur.expires, session.ErrNotOwner)
		}
		_, err = l.kv.Update(ctx, k, val, cur.rev)
		if err == nil {
			return &session.Lease{Key: key, Owner: owner, TTL: lease, Expires: start.Add(lease)}, nil
		}
		if !isConflict(err) {
			return nil, fmt.Errorf("natssession: renew lock %v: %w", key, err)
		}
		if err := backoff(ctx, n); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("natssession: renew lock %v: %w", key, ErrTooManyConflicts)
}

// Release implements session.Locker. Releasing an expired lease removes the
// entry if nobody took it over, and still returns ErrNotOwner: the
// exclusion was lost.
func (l *Locker) Release(ctx context.Context, key session.Key, owner string) error {
	if err := l.checkArgs(key, owner, 0, false); err != nil {
		return err
	}
	k, err := sessionKey(key)
	if err != nil {
		return err
	}
	for n := range l.cfg.MaxConflictRetries {
		now := l.now()
		cur, err := l.load(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) || err == nil && cur.Owner != owner {
			cur, err = l.loadFromLeader(ctx, k, func(e *lockEntry) bool { return e == nil || e.Owner != owner }) // as in Renew
		}
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			return fmt.Errorf("natssession: release lock %v for %q: not held: %w", key, owner, session.ErrNotOwner)
		case err != nil:
			return fmt.Errorf("natssession: release lock %v: %w", key, err)
		case cur.Owner != owner:
			return fmt.Errorf("natssession: release lock %v for %q: held by %q: %w", key, owner, cur.Owner, session.ErrNotOwner)
		}
		err = l.kv.Delete(ctx, k, jetstream.LastRevision(cur.rev))
		if err == nil {
			if !now.Before(cur.expires) {
				return fmt.Errorf("natssession: release lock %v for %q: lease expired at %s: %w", key, owner, cur.expires, session.ErrNotOwner)
			}
			return nil
		}
		if !isConflict(err) {
			return fmt.Errorf("natssession: release lock %v: %w", key, err)
		}
		if err := backoff(ctx, n); err != nil {
			return err
		}
	}
	return fmt.Errorf("natssession: release lock %v: %w", key, ErrTooManyConflicts)
}

func (l *Locker) checkArgs(key session.Key, owner string, lease time.Duration, withLease bool) error {
	if err := session.ValidateLockArgs(key, owner, lease, withLease); err != nil {
		return err
	}
	if withLease && lease > l.cfg.LockMaxAge {
		return fmt.Errorf("natssession: lease %v exceeds the lock bucket's max age %v", lease, l.cfg.LockMaxAge)
	}
	return nil
}

// load reads a lock entry; jetstream.ErrKeyNotFound if there is none (or it
// was deleted).
func (l *Locker) load(ctx context.Context, k string) (*lockEntry, error) {
	e, err := l.kv.Get(ctx, k)
	return decodeLockEntry(k, e, err)
}

// loadFromLeader is load through the bucket stream's leader, confirmed
// (kvbucket.LeaderConfirm) while refused says the entry (nil: none) tells
// owner it lost the lock: never the answer of a replica that lags.
func (l *Locker) loadFromLeader(ctx context.Context, k string, refused func(*lockEntry) bool) (*lockEntry, error) {
	e, err := kvbucket.LeaderConfirm(ctx, l.js, l.cfg.LockBucket, k, func(e jetstream.KeyValueEntry, err error) bool {
		cur, err := decodeLockEntry(k, e, err)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return refused(nil)
		}
		return err == nil && refused(cur)
	})
	return decodeLockEntry(k, e, err)
}

// decodeLockEntry decodes a read of lock entry k.
func decodeLockEntry(k string, e jetstream.KeyValueEntry, err error) (*lockEntry, error) {
	if err != nil {
		return nil, err
	}
	var doc lockDoc
	if err := json.Unmarshal(e.Value(), &doc); err != nil {
		return nil, fmt.Errorf("decode lock entry %s: %w", k, err)
	}
	return &lockEntry{lockDoc: doc, rev: e.Revision(),
		expires: e.Created().Add(time.Duration(doc.LeaseMS) * time.Millisecond)}, nil
}

func encodeLock(owner string, lease time.Duration) ([]byte, error) {
	ms := int64((lease + time.Millisecond - 1) / time.Millisecond)
	return json.Marshal(lockDoc{Owner: owner, LeaseMS: max(ms, 1)})
}
