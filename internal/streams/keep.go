package streams

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// Keep says what Apply keeps of an existing stream where the configuration
// asked for less.
type Keep struct {
	// MaxAge keeps a longer (or unlimited, 0) max age.
	MaxAge bool
}

// Applied is what Apply set on the server, and whether it kept more than it
// was asked for.
type Applied struct {
	// Config is the configuration the stream now has.
	Config jetstream.StreamConfig
	// KeptReplicas is the live replica count Apply kept when the
	// configuration asked for fewer (0: nothing kept).
	KeptReplicas int
	// KeptMaxAge reports that Apply kept a longer or unlimited max age.
	KeptMaxAge bool
}

// Apply creates the stream sc, or updates the existing one to sc, except
// that it never lowers its replica count (and, with keep.MaxAge, never
// shortens its max age). Every process of the fleet calls it at start-up
// with its own configuration: a worker or replayer left on the defaults
// (one replica) must not scale a fleet's R3 streams down to one copy, which
// would lose their fault tolerance without a word. Raising either still
// happens. Lowering them is done by hand (nats stream edit).
func Apply(ctx context.Context, js jetstream.JetStream, sc jetstream.StreamConfig, keep Keep) (Applied, error) {
	out := Applied{Config: sc}
	cur, err := js.Stream(ctx, sc.Name)
	switch {
	case err == nil:
		out = KeepLive(cur.CachedInfo().Config, sc, keep)
	case !errors.Is(err, jetstream.ErrStreamNotFound):
		return out, fmt.Errorf("streams: ensure stream %s: %w", sc.Name, err)
	}
	if _, err := js.CreateOrUpdateStream(ctx, out.Config); err != nil {
		return out, fmt.Errorf("streams: ensure stream %s: %w", sc.Name, err)
	}
	return out, nil
}

// KeepLive returns want as Apply sends it for a stream that has live: the
// higher of the two replica counts and, with keep.MaxAge, the longer max age
// (0, no limit, is longer than any).
func KeepLive(live, want jetstream.StreamConfig, keep Keep) Applied {
	out := Applied{Config: want}
	if live.Replicas > max(want.Replicas, 1) {
		out.Config.Replicas, out.KeptReplicas = live.Replicas, live.Replicas
	}
	if keep.MaxAge && want.MaxAge != 0 && (live.MaxAge == 0 || live.MaxAge > want.MaxAge) {
		out.Config.MaxAge, out.KeptMaxAge = live.MaxAge, true
	}
	return out
}
