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
// entries now have (0: kept until deleted). In no mode does it lower an
// existing bucket's replica count: a process left on the defaults (one
// replica) must not scale a fleet's R3 bucket down to one copy; lowering it
// is done by hand.
func Open(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig, m Mode) (jetstream.KeyValue, time.Duration, error) {
	switch m {
	case Configure, KeepLonger, Existing:
	default:
		return nil, 0, fmt.Errorf("kvbucket: open %s: unknown %v", cfg.Bucket, m)
	}
	kv, err := js.KeyValue(ctx, cfg.Bucket)
	switch {
	case err == nil:
		st, err := kv.Status(ctx)
		if err != nil {
			return nil, 0, fmt.Errorf("bucket %s: status: %w", cfg.Bucket, err)
		}
		cur := st.TTL()
		if m == Existing {
			return kv, cur, nil
		}
		if m == KeepLonger && cfg.TTL != 0 && (cur == 0 || cur > cfg.TTL) {
			cfg.TTL = cur // 0 (no limit) asked for is longer than any
		}
		if r := Replicas(st); r > max(cfg.Replicas, 1) {
			cfg.Replicas = r
		}
	case m == Existing:
		return nil, 0, fmt.Errorf("bucket %s (its owners create it): %w", cfg.Bucket, err)
	case !errors.Is(err, jetstream.ErrBucketNotFound):
		return nil, 0, fmt.Errorf("bucket %s: %w", cfg.Bucket, err)
	}
	kv, err = js.CreateOrUpdateKeyValue(ctx, cfg)
	if err != nil {
		return nil, 0, fmt.Errorf("bucket %s: %w", cfg.Bucket, err)
	}
	return kv, cfg.TTL, nil
}

// Replicas returns the replica count of the bucket whose status st is (0
// when the status does not carry its stream's configuration).
func Replicas(st jetstream.KeyValueStatus) int {
	if bs, ok := st.(*jetstream.KeyValueBucketStatus); ok && bs.StreamInfo() != nil {
		return bs.StreamInfo().Config.Replicas
	}
	return 0
}
