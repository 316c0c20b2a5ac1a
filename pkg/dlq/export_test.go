package dlq

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"
)

// LeaderGet exposes leaderGet to the package's external tests.
func (r *Reader) LeaderGet(ctx context.Context, seq uint64) (*jetstream.RawStreamMsg, error) {
	return r.leaderGet(ctx, seq)
}
