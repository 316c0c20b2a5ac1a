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
// that it never lowers its replica count, keeps its placement when sc sets
// none, and (with keep.MaxAge) never shortens its max age. Every process of
// the fleet calls it at start-up with its own configuration: a worker or
// replayer left on the defaults (one replica) must not scale a fleet's R3
// streams down to one copy, which would lose their fault tolerance without
// a word. Raising either still happens. Lowering them is done by hand (nats
// stream edit), after every process's configuration says so, or the next
// process to start raises them again. Other fields a person set by hand
// (MaxBytes, say) are set back to sc at every start, as before. A live
// stream's subjects are never changed: other subjects (another prefix) are a
// *ConfigError, since the stream's messages would no longer reach its
// consumers.
//
// It reads and then writes: JetStream has no compare-and-set on a stream's
// configuration, so a process on the defaults that reads R1 while another
// raises the stream to R3 can still write R1 back; the next R3 process
// raises it again.
func Apply(ctx context.Context, js jetstream.JetStream, sc jetstream.StreamConfig, keep Keep) (Applied, error) {
	out := Applied{Config: sc}
	cur, err := js.Stream(ctx, sc.Name)
	switch {
	case err == nil:
		if live := cur.CachedInfo().Config.Subjects; !sameSubjects(live, sc.Subjects) {
			// Another prefix for a live stream: its stored messages (queued
			// requests, dead letters) would no longer match the consumers'
			// filters, and producers on the old prefix would lose it.
			return out, &ConfigError{Field: "subjects of stream " + sc.Name,
				Reason: fmt.Sprintf("the stream serves %v and this process is configured for %v: refusing to change them (check the prefixes; change the stream by hand if that is meant)", live, sc.Subjects)}
		}
		out = KeepLive(cur.CachedInfo().Config, sc, keep)
	case !errors.Is(err, jetstream.ErrStreamNotFound):
		return out, fmt.Errorf("streams: read stream %s: %w", sc.Name, err)
	}
	if _, err := js.CreateOrUpdateStream(ctx, out.Config); err != nil {
		return out, fmt.Errorf("streams: create or update stream %s: %w", sc.Name, err)
	}
	return out, nil
}

// KeepLive returns want as Apply sends it for a stream that has live: the
// higher of the two replica counts, live's placement when want has none,
// and, with keep.MaxAge, the longer max age (0, no limit, is longer than
// any).
func KeepLive(live, want jetstream.StreamConfig, keep Keep) Applied {
	out := Applied{Config: want}
	if live.Replicas > max(want.Replicas, 1) {
		out.Config.Replicas, out.KeptReplicas = live.Replicas, live.Replicas
	}
	if want.Placement == nil {
		out.Config.Placement = live.Placement
	}
	if keep.MaxAge && want.MaxAge != 0 && (live.MaxAge == 0 || live.MaxAge > want.MaxAge) {
		out.Config.MaxAge, out.KeptMaxAge = live.MaxAge, true
	}
	return out
}

// sameSubjects reports whether a and b hold the same subjects, in any order.
func sameSubjects(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := make(map[string]int, len(a))
	for _, s := range a {
		seen[s]++
	}
	for _, s := range b {
		if seen[s] == 0 {
			return false
		}
		seen[s]--
	}
	return true
}
