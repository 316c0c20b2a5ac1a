package dlq

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// Reader reads the DLQ stream for the replayer. List and Get never consume
// or acknowledge anything; Fetch, Ack and Delete work the durable
// dlq-replayer consumer and the stream for replays. It is safe for
// concurrent use.
type Reader struct {
	js  jetstream.JetStream
	cfg Config

	mu       sync.Mutex
	stream   jetstream.Stream
	consumer jetstream.Consumer
}

// NewReader returns a Reader on js for cfg (zero fields default). The stream
// and consumer are looked up on first use.
func NewReader(js jetstream.JetStream, cfg Config) *Reader {
	return &Reader{js: js, cfg: cfg.WithDefaults()}
}

func (r *Reader) getStream(ctx context.Context) (jetstream.Stream, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stream != nil {
		return r.stream, nil
	}
	s, err := r.js.Stream(ctx, r.cfg.Stream)
	if err != nil {
		return nil, fmt.Errorf("dlq: stream %s: %w", r.cfg.Stream, err)
	}
	r.stream = s
	return s, nil
}

func (r *Reader) getConsumer(ctx context.Context) (jetstream.Consumer, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.consumer != nil {
		return r.consumer, nil
	}
	c, err := r.js.Consumer(ctx, r.cfg.Stream, r.cfg.Consumer)
	if err != nil {
		return nil, fmt.Errorf("dlq: consumer %s on %s: %w", r.cfg.Consumer, r.cfg.Stream, err)
	}
	r.consumer = c
	return c, nil
}

// List walks the stream by sequence and yields the entries f selects, in
// stream order, without consuming them (one message get per entry, a
// direct get where the stream allows them: works on NATS 2.9, where
// ordered consumers do not; see getMsg for what a replica answers).
//
// A bad entry (not JSON, truncated, unknown version) is yielded as a non-nil
// *Item whose Err is also the error value, a *DecodeError; the walk goes on.
// A nil *Item with an error is fatal (the stream is missing, the server is
// unreachable, ctx ended) and ends the walk. Entries stored after the walk
// passed their sequence are not seen.
func (r *Reader) List(ctx context.Context, f Filter) iter.Seq2[*Item, error] {
	return func(yield func(*Item, error) bool) {
		if err := f.validate(); err != nil {
			yield(nil, err)
			return
		}
		s, err := r.getStream(ctx)
		if err != nil {
			yield(nil, err)
			return
		}
		subject := f.subject(r.cfg.Prefix)
		seq := max(f.FromSeq, 1)
		for {
			if err := ctx.Err(); err != nil {
				yield(nil, fmt.Errorf("dlq: list: %w", err))
				return
			}
			raw, err := getMsg(ctx, s, seq, jetstream.WithGetMsgSubject(subject))
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				return
			}
			if err != nil {
				yield(nil, fmt.Errorf("dlq: list at seq %d: %w", seq, err))
				return
			}
			seq = raw.Sequence + 1
			it := &Item{Seq: raw.Sequence, Subject: raw.Subject, Time: raw.Time, Header: raw.Header}
			if !f.matchesMeta(it) {
				continue
			}
			it = newItem(raw.Sequence, raw.Subject, raw.Time, raw.Header, raw.Data)
			if !yield(it, it.Err) {
				return
			}
		}
	}
}

// Get returns the entry at stream sequence seq without consuming it (a
// direct get where the stream allows them, see getMsg). A missing sequence
// is an error matching jetstream.ErrMsgNotFound, and the stream's leader
// says so (leaderGet): a replica that lags does not make an entry look
// gone. A bad entry is returned as an Item with Err set, and that error.
func (r *Reader) Get(ctx context.Context, seq uint64) (*Item, error) {
	s, err := r.getStream(ctx)
	if err != nil {
		return nil, err
	}
	raw, err := getMsg(ctx, s, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) && s.CachedInfo().Config.AllowDirect {
		raw, err = r.leaderGet(ctx, seq) // not found: the leader's word, see leaderGet
	}
	if err != nil {
		return nil, fmt.Errorf("dlq: get seq %d: %w", seq, err)
	}
	it := newItem(raw.Sequence, raw.Subject, raw.Time, raw.Header, raw.Data)
	return it, it.Err
}

// Fetch pulls up to max entries from the durable dlq-replayer consumer. It
// returns when max arrived, when ctx's deadline is near (or after 30s
// without one) with what arrived until then, or when ctx is cancelled. Bad
// entries come back as Items with Err set (the replayer reports them and
// acknowledges or deletes them); every fetched Item must be acknowledged with
// Ack or it is delivered again after the consumer's AckWait.
func (r *Reader) Fetch(ctx context.Context, max int) ([]*Item, error) {
	c, err := r.getConsumer(ctx)
	if err != nil {
		return nil, err
	}
	batch, err := c.Fetch(max, jetstream.FetchContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("dlq: fetch: %w", err)
	}
	var items []*Item
	for m := range batch.Messages() {
		md, err := m.Metadata()
		if err != nil {
			return items, fmt.Errorf("dlq: fetch: metadata: %w", err)
		}
		it := newItem(md.Sequence.Stream, m.Subject(), md.Timestamp, m.Headers(), m.Data())
		it.msg, it.delivered = m, md.NumDelivered
		items = append(items, it)
	}
	if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
		if ctx.Err() != nil && len(items) > 0 {
			return items, nil
		}
		return items, fmt.Errorf("dlq: fetch: %w", err)
	}
	return items, nil
}

// ErrNotFetched is returned by Ack for an Item that did not come from Fetch.
var ErrNotFetched = errors.New("dlq: item was not fetched from the consumer")

// Ack acknowledges a fetched Item on the dlq-replayer consumer and waits for
// the server to confirm. The entry stays in the stream (limits retention);
// use Delete to remove it.
func (r *Reader) Ack(ctx context.Context, it *Item) error {
	if it == nil || it.msg == nil {
		return ErrNotFetched
	}
	if err := it.msg.DoubleAck(ctx); err != nil {
		return fmt.Errorf("dlq: ack seq %d: %w", it.Seq, err)
	}
	return nil
}

// Delete removes the entry at stream sequence seq from the stream (after a
// successful replay). Deleting a sequence that is already gone is an error.
func (r *Reader) Delete(ctx context.Context, seq uint64) error {
	s, err := r.getStream(ctx)
	if err != nil {
		return err
	}
	if err := s.DeleteMsg(ctx, seq); err != nil {
		return fmt.Errorf("dlq: delete seq %d: %w", seq, err)
	}
	return nil
}

// DeleteBelow removes every entry stored on subject (a literal subject, no
// wildcards) with a stream sequence below seq: in one request (a filtered
// purge) where BatchDeletes says the server's purge is safe, else one
// message delete per entry (deleteEachBelow; an older server's purge moved
// other replayers' consumers past entries they never received; such a
// delete may stop part way, and its error then says how many it deleted
// and up to which sequence). The caller
// must know that all of them may go: the replayer uses it for a run of
// entries it walked and handled without a gap. Below 1 or 2 there is
// nothing (sequences start at 1), so it sends nothing: a purge with
// sequence 0 means "the whole subject" to the server, and NATS 2.9 also
// purges the whole subject for sequence 1.
func (r *Reader) DeleteBelow(ctx context.Context, subject string, seq uint64) error {
	err := r.PurgeBelow(ctx, subject, seq)
	if !errors.Is(err, ErrPurgeUnsafe) {
		return err
	}
	s, err := r.getStream(ctx)
	if err != nil {
		return err
	}
	return r.deleteEachBelow(ctx, s, subject, seq)
}

// ErrPurgeUnsafe is PurgeBelow's refusal on a server whose filtered purge
// is not safe for the DLQ (BatchDeletes is false).
var ErrPurgeUnsafe = errors.New("dlq: this NATS server's filtered purge is not safe for the DLQ (before 2.9.18)")

// PurgeBelow is DeleteBelow's one request, where BatchDeletes holds: a
// filtered purge of the entries on subject below seq. On an older server
// (or one whose version cannot be read) it sends nothing and returns
// ErrPurgeUnsafe, so that a caller that knows the entries' sequences
// deletes them one by one without finding them again (found in review,
// twenty-fourth session: the replayer's remover decided to batch, and
// DeleteBelow, deciding again after a reconnect, read every entry again).
func (r *Reader) PurgeBelow(ctx context.Context, subject string, seq uint64) error {
	if subject == "" || strings.ContainsAny(subject, "*>") {
		return fmt.Errorf("dlq: delete below seq %d: %q is not a literal subject", seq, subject)
	}
	if seq <= 1 {
		return nil
	}
	if !r.BatchDeletes() {
		return ErrPurgeUnsafe
	}
	s, err := r.getStream(ctx)
	if err != nil {
		return err
	}
	if err := s.Purge(ctx, jetstream.WithPurgeSubject(subject), jetstream.WithPurgeSequence(seq)); err != nil {
		return fmt.Errorf("dlq: delete %s below seq %d: %w", subject, seq, err)
	}
	return nil
}
