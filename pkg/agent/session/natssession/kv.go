package natssession

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/kvbucket"
)

// openBucket opens the bucket in mode (kvbucket.Existing instead when
// c.OpenExisting) and returns it with the max age its entries have.
func openBucket(ctx context.Context, js jetstream.JetStream, c Config, bucket, desc string, ttl time.Duration, maxValue int32, mode kvbucket.Mode) (jetstream.KeyValue, time.Duration, error) {
	if c.OpenExisting {
		mode = kvbucket.Existing
	}
	kv, got, err := kvbucket.Open(ctx, js, jetstream.KeyValueConfig{
		Bucket:       bucket,
		Description:  desc,
		History:      1,
		TTL:          ttl,
		MaxValueSize: maxValue,
		Storage:      c.Storage,
		Replicas:     c.Replicas,
	}, mode)
	if err != nil {
		return nil, 0, fmt.Errorf("natssession: open %w", err)
	}
	// Locks, appends and record transitions are revision checks: refuse a
	// server where those are not exclusive on a replicated bucket.
	if err := kvbucket.RequireRevisionChecks(ctx, js, bucket); err != nil {
		return nil, 0, fmt.Errorf("natssession: open %w", err)
	}
	return kv, got, nil
}

// isConflict reports a lost compare-and-set: Update at a stale revision, or
// Create of a key that exists.
func isConflict(err error) bool {
	return errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) || kvbucket.IsRevisionRefusal(err)
}

// backoff waits a jittered, growing delay (at most ~50ms) before retry
// attempt n, or until ctx ends.
func backoff(ctx context.Context, n int) error {
	ceiling := time.Duration(1<<min(n, 6)) * time.Millisecond
	ceiling = min(ceiling, 50*time.Millisecond)
	t := time.NewTimer(rand.N(ceiling) + time.Millisecond/2)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ErrTooManyConflicts is returned (wrapped) when a call lost
// Config.MaxConflictRetries compare-and-sets in a row to concurrent writers.
var ErrTooManyConflicts = errors.New("natssession: too many concurrent updates")
