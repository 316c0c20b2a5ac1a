package replayer

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// walkBatch is how many entries the walk keeps prefetched.
const walkBatch = 500

// walk yields the DLQ entries filter selects, in stream order, up to
// sequence upTo, like dlq.Reader.List but in batches: it reads through a
// short-lived ephemeral pull consumer (no acks, removed at the end and by
// the server after 30s of inactivity if the process dies) that keeps
// walkBatch entries prefetched, instead of one round trip per entry. The stream and the durable
// dlq-replayer consumer are not touched. Bad entries are yielded with Err
// set (a *dlq.DecodeError); a nil item with an error ends the walk.
func (f *Fleet) walk(ctx context.Context, filter dlq.Filter, upTo uint64) iter.Seq2[*dlq.Item, error] {
	return func(yield func(*dlq.Item, error) bool) {
		for _, tok := range []string{filter.Class, filter.Agent} {
			if tok != "" && !validToken(tok) {
				yield(nil, fmt.Errorf("filter %q: %w", tok, dlq.ErrInvalidFilter))
				return
			}
		}
		class, agent := "*", "*"
		if filter.Class != "" {
			class = filter.Class
		}
		if filter.Agent != "" {
			agent = filter.Agent
		}
		cc := jetstream.ConsumerConfig{
			Description:       "dlq-replayer walk (ephemeral)",
			DeliverPolicy:     jetstream.DeliverAllPolicy,
			AckPolicy:         jetstream.AckNonePolicy,
			FilterSubject:     f.Streams.DLQPrefix + "." + class + "." + agent,
			InactiveThreshold: 30 * time.Second,
			MaxAckPending:     -1,
			MemoryStorage:     true,
			ReplayPolicy:      jetstream.ReplayInstantPolicy,
		}
		if !filter.Since.IsZero() {
			cc.DeliverPolicy, cc.OptStartTime = jetstream.DeliverByStartTimePolicy, &filter.Since
		}
		cons, err := f.JS.CreateConsumer(ctx, f.Streams.DLQStream, cc)
		if err != nil {
			yield(nil, fmt.Errorf("walk the DLQ: %w", err))
			return
		}
		name := cons.CachedInfo().Name
		defer func() {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = f.JS.DeleteConsumer(dctx, f.Streams.DLQStream, name)
		}()
		pending := cons.CachedInfo().NumPending
		if pending == 0 {
			return
		}
		// Messages keeps up to walkBatch entries prefetched, so the server
		// delivers the next ones while this side decodes.
		msgs, err := cons.Messages(jetstream.PullMaxMessages(walkBatch))
		if err != nil {
			yield(nil, fmt.Errorf("walk the DLQ: %w", err))
			return
		}
		defer msgs.Stop()
		stopOnCancel := context.AfterFunc(ctx, msgs.Stop)
		defer stopOnCancel()
		var lastDelivery, lastStream uint64 // the consumer and stream sequences of the last message
		wait := f.walkWait
		if wait <= 0 {
			wait = defaultWalkWait
		}
		silent := 0 // waits in a row that got nothing
		for pending > 0 {
			m, err := msgs.Next(jetstream.NextMaxWait(wait))
			if ctx.Err() != nil {
				yield(nil, fmt.Errorf("walk the DLQ: %w", ctx.Err()))
				return
			}
			if errors.Is(err, nats.ErrTimeout) {
				silent++
				done, werr := walkSilence(ctx, cons, wait, lastDelivery, lastStream, silent)
				if werr != nil {
					yield(nil, werr)
					return
				}
				if done {
					return // the rest was deleted (or expired) meanwhile
				}
				continue // a slow server: it still holds entries for this walk
			}
			silent = 0
			if err != nil {
				yield(nil, fmt.Errorf("walk the DLQ: %w", err))
				return
			}
			md, err := m.Metadata()
			if err != nil {
				yield(nil, fmt.Errorf("walk the DLQ: %w", err))
				return
			}
			// Without acks nothing is redelivered: a delivery lost on the way
			// (a reconnect in the middle of a prefetched batch) would leave a
			// hole in the plan that looks like a complete run of entries, and
			// the batched removal relies on the plan being complete. Stop.
			if md.Sequence.Consumer != lastDelivery+1 {
				yield(nil, fmt.Errorf("walk the DLQ: %w: %d deliveries after stream sequence %d never arrived; nothing was replayed or removed, run again",
					ErrWalkInterrupted, md.Sequence.Consumer-lastDelivery-1, lastStream))
				return
			}
			lastDelivery, lastStream = md.Sequence.Consumer, md.Sequence.Stream
			pending = md.NumPending
			seq := md.Sequence.Stream
			if upTo > 0 && seq > upTo {
				return
			}
			if !filter.Until.IsZero() && !md.Timestamp.Before(filter.Until) {
				return
			}
			it := &dlq.Item{Seq: seq, Subject: m.Subject(), Time: md.Timestamp, Header: m.Headers(), Data: m.Data()}
			e, derr := dlq.DecodeEntry(it.Data)
			if derr != nil {
				var de *dlq.DecodeError
				if errors.As(derr, &de) {
					de.Seq, de.Subject = seq, it.Subject
				}
				it.Err = derr
			} else {
				it.Entry = e
			}
			if filter.InvocationID != "" && !ofInvocation(it, filter.InvocationID) {
				continue
			}
			if !yield(it, it.Err) {
				return
			}
		}
	}
}

// defaultWalkWait is how long the walk waits for its next entry before it
// asks the server whether any are left; walkPatience is how many such waits
// in a row it accepts from a server that still holds entries for it.
const (
	defaultWalkWait = 5 * time.Second
	walkPatience    = 3
)

// walkSilence decides what a wait that got nothing means. The walk's
// consumer tells: nothing pending and nothing delivered past the last entry
// received means the rest of the entries were deleted (or expired) during
// the walk, and the walk is complete (done). Deliveries past the last entry
// received that have not arrived after walkPatience waits were lost on the
// way; a consumer that cannot be asked, or that still holds entries after
// walkPatience waits, is a server that stopped serving the walk. Those end the walk with ErrWalkInterrupted rather than
// with a plan that silently misses the rest of the DLQ (it used to end the
// plan early without a word). Fewer waits than that: wait again.
func walkSilence(ctx context.Context, cons jetstream.Consumer, wait time.Duration, lastDelivery, lastStream uint64, silent int) (done bool, err error) {
	ictx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	info, err := cons.Info(ictx)
	if err != nil {
		if ctx.Err() != nil {
			return false, fmt.Errorf("walk the DLQ: %w", ctx.Err())
		}
		return false, fmt.Errorf("walk the DLQ: %w: the server sent nothing for %s after stream sequence %d and did not answer (%v); nothing was replayed or removed, run again",
			ErrWalkInterrupted, wait, lastStream, err)
	}
	if info.Delivered.Consumer > lastDelivery {
		// Sent but not received: late (a slow server, a busy link) or
		// lost. Wait again; a later delivery after a gap is caught by the
		// walk's sequence check, and none within the patience is a loss
		// (found in review, eighteenth session: a late delivery failed
		// the walk at once).
		if silent >= walkPatience {
			return false, fmt.Errorf("walk the DLQ: %w: %d deliveries after stream sequence %d never arrived; nothing was replayed or removed, run again",
				ErrWalkInterrupted, info.Delivered.Consumer-lastDelivery, lastStream)
		}
		return false, nil
	}
	if info.NumPending == 0 {
		return true, nil
	}
	if silent >= walkPatience {
		return false, fmt.Errorf("walk the DLQ: %w: the server sent nothing for %s after stream sequence %d while %d entries remained; nothing was replayed or removed, run again",
			ErrWalkInterrupted, time.Duration(silent)*wait, lastStream, info.NumPending)
	}
	return false, nil
}

// ErrWalkInterrupted is returned (wrapped) by Plan when deliveries of the
// walk were lost, e.g. to a reconnect, or the server stopped sending them:
// the plan would be incomplete.
var ErrWalkInterrupted = errors.New("the walk of the DLQ was interrupted")

// validToken reports whether s is a single subject token.
func validToken(s string) bool {
	for _, r := range s {
		switch r {
		case '.', '*', '>', ' ', '\t', '\r', '\n':
			return false
		}
	}
	return true
}
