package natssession

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// Bucket name defaults.
const (
	DefaultSessionBucket    = "agent_sessions"
	DefaultLockBucket       = "agent_session_locks"
	DefaultInvocationBucket = "agent_invocations"
)

// DefaultLockMaxAge is the lock bucket's MaxAge when Config.LockMaxAge is 0.
const DefaultLockMaxAge = 24 * time.Hour

// DefaultMaxConflictRetries bounds the read-modify-write retries of one call
// when Config.MaxConflictRetries is 0.
const DefaultMaxConflictRetries = 200

// Config configures the NATS KV session backend. The zero value plus
// WithDefaults is a working configuration.
type Config struct {
	// SessionBucket names the session bucket (default DefaultSessionBucket).
	SessionBucket string
	// LockBucket names the lock bucket (default DefaultLockBucket).
	LockBucket string
	// InvocationBucket names the invocation bucket (default
	// DefaultInvocationBucket).
	InvocationBucket string
	// SessionTTL, when positive, is the session bucket's MaxAge (at least
	// 100ms, JetStream's minimum): a session expires this long after its
	// last append. Zero keeps sessions.
	SessionTTL time.Duration
	// LockMaxAge is the lock bucket's MaxAge (default DefaultLockMaxAge): it
	// removes lock entries nobody released. Leases may not exceed it.
	LockMaxAge time.Duration
	// InvocationRetention is the invocation bucket's MaxAge: how long a
	// record is kept after its last transition (default
	// session.DefaultInvocationRetention).
	InvocationRetention time.Duration
	// MaxValueSize, when positive, caps a session entry (the bucket's
	// MaxValueSize; a session may use it less 1,024 bytes for the
	// update's headers, so at least 2,048); the server's max_payload caps
	// it anyway.
	MaxValueSize int32
	// Replicas is the buckets' replication factor (default 1).
	Replicas int
	// Storage is the buckets' storage (default file).
	Storage jetstream.StorageType
	// MaxConflictRetries bounds how often one call retries after a revision
	// conflict (default DefaultMaxConflictRetries).
	MaxConflictRetries int
	// OpenExisting opens the buckets as they are, for a process that does
	// not own them (dlq-replayer): nothing is created or reconfigured, a
	// missing bucket is an error, and a Locker's leases are capped by the
	// lock bucket's own max age. Without it, the session and lock buckets
	// are created or updated to this Config, and the invocation bucket too,
	// except that its max age is never lowered.
	OpenExisting bool
}

// WithDefaults returns c with empty fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.SessionBucket == "" {
		c.SessionBucket = DefaultSessionBucket
	}
	if c.LockBucket == "" {
		c.LockBucket = DefaultLockBucket
	}
	if c.InvocationBucket == "" {
		c.InvocationBucket = DefaultInvocationBucket
	}
	if c.LockMaxAge == 0 {
		c.LockMaxAge = DefaultLockMaxAge
	}
	if c.InvocationRetention == 0 {
		c.InvocationRetention = session.DefaultInvocationRetention
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.MaxConflictRetries == 0 {
		c.MaxConflictRetries = DefaultMaxConflictRetries
	}
	return c
}

// Validate reports a configuration that cannot work. Call it on the result
// of WithDefaults.
func (c Config) Validate() error {
	var errs []error
	for _, b := range []string{c.SessionBucket, c.LockBucket, c.InvocationBucket} {
		switch {
		case !validBucket(b):
			errs = append(errs, fmt.Errorf("bucket name %q is not [a-zA-Z0-9_-]+", b))
		case len(b) > maxBucketLen:
			errs = append(errs, fmt.Errorf("bucket name of %d bytes is longer than %d (its stream KV_<bucket> must fit the server's 255-byte name limit)", len(b), maxBucketLen))
		}
	}
	if c.SessionTTL < 0 {
		errs = append(errs, fmt.Errorf("session TTL %v is negative", c.SessionTTL))
	} else if c.SessionTTL > 0 && c.SessionTTL < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("session TTL %v is below 100ms (JetStream's minimum max age; 0 keeps sessions)", c.SessionTTL))
	}
	if c.LockMaxAge < time.Second {
		errs = append(errs, fmt.Errorf("lock max age %v is below 1s", c.LockMaxAge))
	}
	if c.InvocationRetention < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("invocation retention %v is below 100ms", c.InvocationRetention))
	}
	if c.MaxValueSize < 0 {
		errs = append(errs, fmt.Errorf("max value size %d is negative", c.MaxValueSize))
	}
	if c.MaxValueSize > 0 && c.MaxValueSize < 2*headerSlack {
		errs = append(errs, fmt.Errorf("max value size %d leaves no room for a session after the headers' %d bytes (at least %d)", c.MaxValueSize, headerSlack, 2*headerSlack))
	}
	if c.Replicas < 1 || c.Replicas > 5 {
		errs = append(errs, fmt.Errorf("replicas %d is not 1..5", c.Replicas))
	}
	if c.MaxConflictRetries < 1 {
		errs = append(errs, fmt.Errorf("max conflict retries %d is below 1", c.MaxConflictRetries))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("natssession: config: %w", err)
	}
	return nil
}

// maxBucketLen is the longest bucket name: its stream, "KV_<bucket>", must
// fit the server's name limit (255 bytes), and MaxKeyLen's bound on the
// protocol lines counts on it.
const maxBucketLen = 255 - len("KV_")

func validBucket(b string) bool {
	if b == "" {
		return false
	}
	for _, r := range b {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}
