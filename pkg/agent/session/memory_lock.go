package session

import (
	"context"
	"sync"
	"time"
)

// MemoryLocker is an in-process Locker for tests and embedded mode. Leases
// are measured with the local clock. Its zero value is not usable; call
// NewMemoryLocker.
type MemoryLocker struct {
	mu    sync.Mutex
	locks map[Key]memoryLock
	now   func() time.Time
}

type memoryLock struct {
	owner   string
	expires time.Time
}

// NewMemoryLocker returns a MemoryLocker with no locks held.
func NewMemoryLocker() *MemoryLocker {
	return &MemoryLocker{locks: map[Key]memoryLock{}, now: time.Now}
}

// Acquire implements Locker.
func (m *MemoryLocker) Acquire(ctx context.Context, key Key, owner string, lease time.Duration) (*Lease, error) {
	if err := ValidateLockArgs(key, owner, lease, true); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if cur, ok := m.locks[key]; ok && cur.owner != owner && now.Before(cur.expires) {
		return nil, &LockedError{Key: key, Owner: cur.owner, Until: cur.expires}
	}
	l := memoryLock{owner: owner, expires: now.Add(lease)}
	m.locks[key] = l
	return &Lease{Key: key, Owner: owner, TTL: lease, Expires: l.expires}, nil
}

// Renew implements Locker.
func (m *MemoryLocker) Renew(ctx context.Context, key Key, owner string, lease time.Duration) (*Lease, error) {
	if err := ValidateLockArgs(key, owner, lease, true); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	cur, ok := m.locks[key]
	if !ok || cur.owner != owner || !now.Before(cur.expires) {
		return nil, ErrNotOwner
	}
	cur.expires = now.Add(lease)
	m.locks[key] = cur
	return &Lease{Key: key, Owner: owner, TTL: lease, Expires: cur.expires}, nil
}

// Release implements Locker.
func (m *MemoryLocker) Release(ctx context.Context, key Key, owner string) error {
	if err := ValidateLockArgs(key, owner, 0, false); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.locks[key]
	if !ok || cur.owner != owner {
		return ErrNotOwner
	}
	delete(m.locks, key)
	if !m.now().Before(cur.expires) {
		return ErrNotOwner
	}
	return nil
}
