package natssession

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// openBucket creates the bucket or updates its configuration.
func openBucket(ctx context.Context, js jetstream.JetStream, c Config, bucket, desc string, ttl time.Duration, maxValue int32) (jetstream.KeyValue, error) {
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:       bucket,
		Description:  desc,
		History:      1,
		TTL:          ttl,
		MaxValueSize: maxValue,
		Storage:      c.Storage,
		Replicas:     c.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("natssession: open bucket %s: %w", bucket, err)
	}
	return kv, nil
}

// isConflict reports a lost compare-and-set: Update at a stale revision, or
// Create of a key that exists.
func isConflict(err error) bool {
	return errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists)
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
