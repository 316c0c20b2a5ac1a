package dlq

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// Gone reports whether the entry at seq was deleted, as the stream's leader
// says (not a replica a direct get may reach, which may not have applied a
// delete yet: on an R3 stream a replayer whose delete failed because
// another one deleted first read the entry as still there, and reported an
// error; found in review, twenty-first session). An error is a read that
// failed for another reason: the caller cannot tell.
//
// On a stream of one replica the one server answers a direct get, which
// is used: a leader read returns the entry base64 in JSON, a third larger,
// which a server whose max_pending is its max_payload refuses for a large
// entry by closing the connection (found in review of the change). A
// replicated stream still has that cost for a large entry.
func (r *Reader) Gone(ctx context.Context, seq uint64) (bool, error) {
	s, err := r.getStream(ctx)
	if err != nil {
		return false, fmt.Errorf("dlq: is seq %d gone: %w", seq, err)
	}
	if info := s.CachedInfo(); info != nil && info.Config.Replicas <= 1 {
		_, err = getMsg(ctx, s, seq)
	} else {
		_, err = r.leaderGet(ctx, seq)
	}
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("dlq: is seq %d gone: %w", seq, err)
	}
	return false, nil
}
