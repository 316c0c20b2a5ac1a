package redissession

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// acquireScript takes the lock if it is free (absent or expired: Redis
// removed the key) or already owner's. KEYS[1] lock key; ARGV[1] owner,
// ARGV[2] lease in ms. Returns {1} or {0, current owner, remaining ms}.
var acquireScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if (not cur) or cur == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return {1}
end
return {0, cur, redis.call('PTTL', KEYS[1])}
`)

// renewScript extends the lease if owner holds the lock. Returns 1 or 0.
var renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
`)

// releaseScript deletes the lock if owner holds it. Returns 1 or 0.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`)

// Locker is a session.Locker on Redis: the lock is a string key holding the
// owner token with a PX expiry equal to the lease, changed only by Lua
// scripts that compare the owner first (one round trip each). Expiry is
// the Redis server's, so worker clocks do not matter. It is safe for
// concurrent use.
type Locker struct {
	rdb redis.UniversalClient
	cfg Config
}

var _ session.Locker = (*Locker)(nil)

// NewLocker returns a Locker on rdb. cfg gets its defaults and is validated.
func NewLocker(rdb redis.UniversalClient, cfg Config) (*Locker, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Locker{rdb: rdb, cfg: cfg}, nil
}

// Acquire implements session.Locker.
func (l *Locker) Acquire(ctx context.Context, key session.Key, owner string, lease time.Duration) (*session.Lease, error) {
	if err := session.ValidateLockArgs(key, owner, lease, true); err != nil {
		return nil, err
	}
	start := time.Now()
	res, err := acquireScript.Run(ctx, l.rdb, []string{l.cfg.sessionKeys(key).lock}, owner, leaseMillis(lease)).Slice()
	if err != nil {
		return nil, fmt.Errorf("redissession: acquire lock %v: %w", key, err)
	}
	if ok, _ := res[0].(int64); ok == 1 {
		return &session.Lease{Key: key, Owner: owner, TTL: lease, Expires: start.Add(lease)}, nil
	}
	if len(res) != 3 {
		return nil, fmt.Errorf("redissession: acquire lock %v: unexpected reply %v", key, res)
	}
	cur, _ := res[1].(string)
	pttl, _ := res[2].(int64)
	return nil, &session.LockedError{Key: key, Owner: cur, Until: time.Now().Add(time.Duration(pttl) * time.Millisecond)}
}

// Renew implements session.Locker.
func (l *Locker) Renew(ctx context.Context, key session.Key, owner string, lease time.Duration) (*session.Lease, error) {
	if err := session.ValidateLockArgs(key, owner, lease, true); err != nil {
		return nil, err
	}
	start := time.Now()
	n, err := renewScript.Run(ctx, l.rdb, []string{l.cfg.sessionKeys(key).lock}, owner, leaseMillis(lease)).Int64()
	if err != nil {
		return nil, fmt.Errorf("redissession: renew lock %v: %w", key, err)
	}
	if n != 1 {
		return nil, fmt.Errorf("redissession: renew lock %v for %q: %w", key, owner, session.ErrNotOwner)
	}
	return &session.Lease{Key: key, Owner: owner, TTL: lease, Expires: start.Add(lease)}, nil
}

// Release implements session.Locker.
func (l *Locker) Release(ctx context.Context, key session.Key, owner string) error {
	if err := session.ValidateLockArgs(key, owner, 0, false); err != nil {
		return err
	}
	n, err := releaseScript.Run(ctx, l.rdb, []string{l.cfg.sessionKeys(key).lock}, owner).Int64()
	if err != nil {
		return fmt.Errorf("redissession: release lock %v: %w", key, err)
	}
	if n != 1 {
		return fmt.Errorf("redissession: release lock %v for %q: %w", key, owner, session.ErrNotOwner)
	}
	return nil
}

// leaseMillis rounds a lease up to whole milliseconds (at least 1).
func leaseMillis(d time.Duration) int64 {
	ms := int64((d + time.Millisecond - 1) / time.Millisecond)
	return max(ms, 1)
}
