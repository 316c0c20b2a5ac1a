package worker

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/pkg/dlq"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// publishEntry publishes e, the dead letter of a run (or of a message the
// worker panicked on) that its caller records next, under its replay
// generation's message id (dlq.Publisher.Publish), awaits the PubAck and
// counts the entry the DLQ stores (countEntry). It returns an error only
// when a publish failed: the caller puts the message back.
//
// A duplicate PubAck means an earlier delivery of the same generation
// published an entry and did not record it (its record write failed, its
// PubAck was lost, or it crashed): the record still said running, so this
// delivery ran again. What must hold is that a failure the replayer
// replays by itself (taxonomy Policy.AutoReplay: the replayer's
// AutoReplayable), whose user is told "queued", has an entry the replayer
// replays. So the stored entry is kept, and e dropped as a duplicate,
// unless e's class is replayed automatically and the stored entry's is
// not; then e is published beside it (publishAside). Kept are an entry of
// e's class (this failure published again), one replayed automatically
// (its replay runs the work, and fails again as it must, under the next
// generation's id), and, when e's class waits for a person too, the first
// of the two (a person looks at it anyway; the record's reason is one
// `dlq-replayer show` away). Published beside it whatever its class (as
// first fixed in the twenty-fourth session), a second class waiting for a
// person took the id an entry published beside takes, and a third
// failure, RATE_LIMITED, was dropped against it: the user was told
// "queued" and nothing replayed the work (found in review of that fix).
//
// The stored entry is read (storedClass). A read that fails does not put
// the message back: the DLQ holds this generation's entry, and a
// redelivery would only run the invocation again, and again while the read
// fails, never answering its user (found in review of the twenty-fourth
// session's fix). The stored class is then the one this worker counted
// there, if it did; if not, e is published beside it when e's class is
// replayed automatically (at worst a second entry of the same work, whose
// replay finds the finished record and is acked, alreadyDone), and the
// stored entry is kept when it is not. An entry gone since (replayed,
// parked or purged) leaves e to be published beside it too.
//
// Two entries of one generation are not run twice by their replays: both
// have the same replay count, and a replay at or below the count of the
// invocation's finished record is acked without running (alreadyDone).
func (w *Worker) publishEntry(ctx context.Context, j *job, e *dlq.Entry) error {
	ack, err := w.deps.DLQ.Publish(ctx, e)
	if err != nil {
		return err
	}
	class := taxonomy.Class(e.Class)
	if !ack.Duplicate {
		w.countEntry(ack, class, e.Agent)
		return nil
	}
	stored, err := w.storedClass(ctx, ack.Sequence)
	if err != nil {
		stored = w.counted.class(ack.Sequence)
		if stored == "" && !taxonomy.PolicyFor(class).AutoReplay {
			stored = class // kept, whatever it is
		}
		j.logAt(zerolog.WarnLevel).Err(err).Str("class", e.Class).Str("stored_class", string(stored)).
			Msg("dead letter's generation id taken by an entry that cannot be read; decided without reading it")
	}
	if stored != "" && (stored == class || taxonomy.PolicyFor(stored).AutoReplay || !taxonomy.PolicyFor(class).AutoReplay) {
		w.countEntry(ack, stored, e.Agent)
		return nil
	}
	return w.publishAside(ctx, j, e)
}

// publishAside publishes e beside the entry holding its generation's id
// (publishEntry): as received (dlq.SourceMsgID, named by its request's
// stream sequence, which a redelivery keeps, so a re-publish is still
// dropped), and counts what the DLQ stores there. A duplicate there is
// kept: only a failure replayed automatically is published aside, so an
// earlier delivery's entry there is one too (its replay runs the work).
// Another entry of the same request message published as received (a
// refusal by a worker without the agent, or a worker of an earlier
// version) could hold the id: the work then waits in it for a person, and
// the log line says so.
func (w *Worker) publishAside(ctx context.Context, j *job, e *dlq.Entry) error {
	ack, err := w.deps.DLQ.PublishAsReceived(ctx, e)
	if err != nil {
		return err
	}
	class := taxonomy.Class(e.Class)
	if ack.Duplicate {
		stored, err := w.storedClass(ctx, ack.Sequence)
		if err != nil || stored == "" {
			stored = w.counted.class(ack.Sequence)
		}
		if stored != "" {
			class = stored
		}
		if class != taxonomy.Class(e.Class) && !taxonomy.PolicyFor(class).AutoReplay {
			j.logAt(zerolog.ErrorLevel).Str("class", e.Class).Str("stored_class", string(class)).
				Msg("dead letter not stored: its ids are taken by entries that wait for a person; replay the request by hand")
		}
	}
	w.countEntry(ack, class, e.Agent)
	return nil
}

// storedClass returns the class of the DLQ entry at stream sequence seq
// ("" when it is gone; UNKNOWN when its class is none this worker knows).
func (w *Worker) storedClass(ctx context.Context, seq uint64) (taxonomy.Class, error) {
	r := dlq.NewReader(w.deps.JS, dlq.Config{Stream: w.deps.Streams.DLQStream, Prefix: w.deps.Streams.DLQPrefix})
	it, err := r.Get(ctx, seq)
	switch {
	case it != nil:
		if c, err := taxonomy.ParseClass(it.Header.Get(dlq.HeaderClass)); err == nil {
			return c, nil
		}
		return taxonomy.Unknown, nil
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return "", nil
	default:
		return "", fmt.Errorf("read the dead letter at DLQ sequence %d: %w", seq, err)
	}
}
