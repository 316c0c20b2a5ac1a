package kvbucket

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/natsversion"
)

// ErrRevisionChecksUnsafe is matched by RequireRevisionChecks' error: the
// server does not check a write's expected revision atomically on a
// replicated stream, so a lock or a claim made by a revision check is not
// exclusive there.
var ErrRevisionChecksUnsafe = errors.New("kvbucket: the server's revision checks are not atomic on replicated buckets")

// RequireRevisionChecks refuses a replicated (R>1) bucket on a server older
// than 2.9.21. Before that version a clustered stream checked the expected
// last sequence before proposing a write, not when applying it
// (nats-server #4320), so several writes at one revision could all be
// accepted: on such a cluster several workers held one session lock at once
// (seen with a three-node 2.9.10 cluster). One replica, or a newer server,
// is fine.
func RequireRevisionChecks(ctx context.Context, js jetstream.JetStream, bucket string) error {
	s, err := js.Stream(ctx, streamName(bucket))
	if err != nil {
		return fmt.Errorf("bucket %s: read its configuration: %w", bucket, err)
	}
	if s.CachedInfo().Config.Replicas <= 1 || js.Conn() == nil {
		return nil
	}
	v := js.Conn().ConnectedServerVersion()
	if atomicRevisionChecks(v) {
		return nil
	}
	return fmt.Errorf("%w: bucket %s has %d replicas on NATS %s; upgrade the servers to 2.9.21 or later, or use one replica",
		ErrRevisionChecksUnsafe, bucket, s.CachedInfo().Config.Replicas, v)
}

// atomicRevisionChecks reports whether server version v (e.g. "2.9.10")
// checks expected revisions atomically on replicated streams: 2.9.21 and
// later, a pre-release of 2.9.21 included (built from the release branch
// that carries the fix; found in review, twenty-fourth session: moved onto
// natsversion, which orders a pre-release before its release, it refused
// one). An unreadable version is trusted (a development build).
func atomicRevisionChecks(v string) bool {
	core, _, _ := strings.Cut(v, "-")
	ok, known := natsversion.AtLeast(core, "2.9.21")
	return ok || !known
}

// IsRevisionRefusal reports the server's revision-check refusal as a bare
// API error, which nats.go leaves unmapped on one path: Create over a
// deleted key retries as an Update, and a replicated (R>1) bucket reports
// the refusal with code 10164, not 10071 (so neither ErrKeyExists nor
// ErrKeyRevisionMismatch matches it). A caller treats it as a lost
// compare-and-set, as those.
func IsRevisionRefusal(err error) bool {
	var ae *jetstream.APIError
	return errors.As(err, &ae) && (ae.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		ae.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}
