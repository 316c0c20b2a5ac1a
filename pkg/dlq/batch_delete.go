package dlq

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/natsversion"
)

// minBatchDeleteVersion is the oldest NATS server on which DeleteBelow
// removes a run of entries with one filtered purge. An older server gets
// one message delete per entry, because there a filtered purge is unsafe
// for a DLQ that more than one replayer (or the durable dlq-replayer
// consumer) reads:
//
//   - before 2.9.12 (nats-server #3838) a purge of one subject moved every
//     consumer whose filter overlaps it (another replayer's walk without
//     --class or --agent, the durable consumer) to the purged subject's
//     next message: the entries of the other subjects in between were never
//     delivered to it, its delivery sequence stayed contiguous, and its
//     plan, complete to all appearances, made its own batched removal purge
//     them unreplayed (found in review, twenty-fourth session, on 2.9.10);
//   - before 2.9.18 (nats-server #4212) a clustered server that restarted
//     replayed a filtered purge from its log as a purge of the whole stream
//     up to its last sequence at the time.
//
// 2.10.0 to 2.10.10 leave a consumer whose filter is wider than the purged
// subject where it is (2.10.11, nats-server #5075, moves it only to the
// stream's first message): it skips nothing, so those batch as well.
const minBatchDeleteVersion = "2.9.18"

// BatchDeletes reports whether DeleteBelow removes a run of entries with
// one request on the server the connection is on now (NATS 2.9.18 or
// later); on an older one, or when the version cannot be read (no
// connection), it deletes them one by one. The server a client is
// connected to is the only one whose version it can know: in a cluster
// being upgraded from an older version, another server holding the stream
// may still be older, so finish the upgrade before draining.
func (r *Reader) BatchDeletes() bool {
	nc := r.js.Conn()
	if nc == nil {
		return false
	}
	return batchDeleteVersion(nc.ConnectedServerVersion())
}

// batchDeleteVersion reports whether server version v (e.g. "2.9.10",
// "2.11.0-RC.1") is minBatchDeleteVersion or later. An unreadable version,
// and a pre-release of the minimum itself, are not.
func batchDeleteVersion(v string) bool {
	ok, known := natsversion.AtLeast(v, minBatchDeleteVersion)
	return ok && known
}

// deleteEachBelow is DeleteBelow on a server whose filtered purge is not
// safe (see minBatchDeleteVersion): it finds the entries of subject below
// seq one at a time (the next message of the subject, read as List reads)
// and deletes each with a message delete, which moves no consumer. An
// entry deleted meanwhile by another process is not an error. A replica
// that lags may not show an entry stored just now: it stays in the DLQ
// (the caller only asks for entries it handled long before).
func (r *Reader) deleteEachBelow(ctx context.Context, s jetstream.Stream, subject string, seq uint64) error {
	deleted := 0
	for next := uint64(1); next < seq; {
		raw, err := getMsg(ctx, s, next, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("dlq: delete %s below seq %d: %d deleted (up to seq %d), then read from seq %d: %w", subject, seq, deleted, next-1, next, err)
		}
		if raw.Sequence >= seq {
			return nil
		}
		if err := s.DeleteMsg(ctx, raw.Sequence); err != nil {
			if gone, _ := r.Gone(ctx, raw.Sequence); !gone {
				return fmt.Errorf("dlq: delete %s below seq %d: %d deleted (below seq %d), then seq %d: %w", subject, seq, deleted, raw.Sequence, raw.Sequence, err)
			}
		} else {
			deleted++
		}
		next = raw.Sequence + 1
	}
	return nil
}
