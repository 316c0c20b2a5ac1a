// Package kvbucket opens the JetStream KV buckets of the NATS KV stores
// (pkg/idempotency/natskv, pkg/agent/session/natssession) in one of three
// ways: as the owner that configures them, as an owner that may raise but
// never lower a bucket's max age (records whose age is a safety bound), or
// as a process that only reads them as they are (dlq-replayer). No mode
// lowers a bucket's replica count.
//
// JetStream has no compare-and-set on a stream's configuration: two owners
// starting at the same moment with different max ages can still leave the
// shorter one. KeepLonger closes the common case, a process whose
// configuration is older or shorter than the fleet's (a replayer on its
// defaults, a worker during a rolling change).
package kvbucket

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/streams"
)

// Mode says how Open treats a bucket.
type Mode int

const (
	// Configure creates the bucket or updates it to the configuration
	// given, also to a shorter max age (never to fewer replicas: see Open).
	Configure Mode = iota
	// KeepLonger is Configure, except that an existing bucket's max age is
	// never lowered: a bucket that keeps entries longer (or forever) keeps
	// them so.
	KeepLonger
	// Existing opens the bucket as it is: nothing is created or changed,
	// and a missing bucket is an error wrapping jetstream.ErrBucketNotFound.
	Existing
)

// String returns the mode's name.
func (m Mode) String() string {
	switch m {
	case Configure:
		return "configure"
	case KeepLonger:
		return "keep-longer"
	case Existing:
		return "existing"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Open opens cfg.Bucket in mode m and returns it with the max age its
// entries now have (0: kept until deleted). Configure and KeepLonger never
// lower an existing bucket's replica count and keep its placement when cfg
// sets none: a process left on the defaults (one replica) must not scale a
// fleet's R3 bucket down to one copy (lowering it is done by hand, after
// every process's configuration says so, or the next one raises it again).
// Like the max age, this is a read then a write, not a compare-and-set.
func Open(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig, m Mode) (jetstream.KeyValue, time.Duration, error) {
	switch m {
	case Configure, KeepLonger:
	case Existing:
		kv, err := js.KeyValue(ctx, cfg.Bucket)
		if err != nil {
			return nil, 0, fmt.Errorf("bucket %s (its owners create it): %w", cfg.Bucket, err)
		}
		st, err := kv.Status(ctx)
		if err != nil {
			return nil, 0, fmt.Errorf("bucket %s: status: %w", cfg.Bucket, err)
		}
		return kv, st.TTL(), nil
	default:
		return nil, 0, fmt.Errorf("kvbucket: open %s: unknown %v", cfg.Bucket, m)
	}
	// One read of the bucket's stream. A stream that is not a valid bucket
	// is read too, and the update below repairs it as it always did.
	s, err := js.Stream(ctx, streamName(cfg.Bucket))
	switch {
	case err == nil:
		cfg = keepLive(s.CachedInfo().Config, cfg, m)
	case !errors.Is(err, jetstream.ErrStreamNotFound):
		return nil, 0, fmt.Errorf("bucket %s: read its configuration: %w", cfg.Bucket, err)
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, cfg)
	if err != nil {
		return nil, 0, fmt.Errorf("bucket %s: %w", cfg.Bucket, err)
	}
	return kv, cfg.TTL, nil
}

// keepLive returns cfg as Open sends it for a bucket whose stream has live:
// the streams' rule (streams.KeepLive) on the bucket's replicas, placement
// and max age (kept longer in KeepLonger only).
func keepLive(live jetstream.StreamConfig, cfg jetstream.KeyValueConfig, m Mode) jetstream.KeyValueConfig {
	k := streams.KeepLive(live, jetstream.StreamConfig{Replicas: cfg.Replicas, Placement: cfg.Placement, MaxAge: cfg.TTL},
		streams.Keep{MaxAge: m == KeepLonger})
	cfg.Replicas, cfg.Placement, cfg.TTL = k.Config.Replicas, k.Config.Placement, k.Config.MaxAge
	return cfg
}

// streamName is the stream behind a KV bucket.
func streamName(bucket string) string { return "KV_" + bucket }
