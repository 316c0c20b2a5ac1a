package dlq

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// directGetHeaders are the headers a direct get adds to the stored ones to
// say where the message is (nats-server's JSStream, JSSubject, JSSequence,
// JSTimeStamp and those of a batched get). getMsg removes them, so an
// Item's Header is the entry's as stored, however it was read, and a copy
// of it (the replayer's park) does not carry them into another stream,
// where the direct get of the copy would add its own after them and the
// client would read the first, stale, sequence.
var directGetHeaders = []string{
	jetstream.StreamHeader, jetstream.SubjectHeader, jetstream.SequenceHeader, jetstream.TimeStampHeaer,
	jetstream.LastSequenceHeader, "Nats-Num-Pending", "Nats-UpTo-Sequence",
}

// getMsg reads one message of s as GetMsg does: with a direct get when the
// stream info s was looked up with allows them, else with a stream message
// get. When direct gets were turned off since (by a process of an earlier
// version: streams.Ensure), a direct get finds no responder (NATS 2.10 and
// later) or no answer (NATS 2.9: it times out, after the client's default
// timeout when ctx has no deadline); either refreshes the stream info and,
// when it now says so, reads again with a stream message get.
//
// A direct get may be answered by any replica of a replicated stream,
// which can lag the leader (by a moment, or longer when it is cut off): a
// List may miss an entry stored meanwhile (as if it came after the walk
// passed its sequence: the next walk sees it) and may yield one deleted
// meanwhile (its replay is then dropped as a duplicate by the requests
// stream, or kept from running twice by the worker's invocation record).
// Get has the leader confirm that an entry is not there (leaderGet).
func getMsg(ctx context.Context, s jetstream.Stream, seq uint64, opts ...jetstream.GetMsgOpt) (*jetstream.RawStreamMsg, error) {
	raw, err := directTry(ctx, s, seq, opts...)
	if directGone(ctx, s, err) {
		if info, ierr := s.Info(ctx); ierr == nil && !info.Config.AllowDirect {
			raw, err = s.GetMsg(ctx, seq, opts...)
		}
	}
	if err != nil {
		return nil, err
	}
	for _, h := range directGetHeaders {
		raw.Header.Del(h)
	}
	if len(raw.Header) == 0 {
		raw.Header = nil
	}
	return raw, nil
}

// directGrace is how long a direct get waits for an answer before the
// stream's info is asked, alongside, whether direct gets are still on (at
// most a quarter of what is left of ctx).
const directGrace = time.Second

// directTry is s.GetMsg. When s's info allows direct gets and no answer
// came within directGrace, it asks for the stream's info meanwhile: on
// NATS 2.9 a direct get of a stream whose direct gets were turned off gets
// no answer at all, and then the get is made again as a stream message get
// with what is left of ctx. A direct get that is only slow keeps the whole
// of ctx (found in review, twenty-first session: a fixed share of the
// deadline failed slow but healthy reads).
func directTry(ctx context.Context, s jetstream.Stream, seq uint64, opts ...jetstream.GetMsgOpt) (*jetstream.RawStreamMsg, error) {
	if info := s.CachedInfo(); info == nil || !info.Config.AllowDirect {
		return s.GetMsg(ctx, seq, opts...)
	}
	type answer struct {
		raw *jetstream.RawStreamMsg
		err error
	}
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan answer, 1)
	go func() {
		raw, err := s.GetMsg(dctx, seq, opts...)
		done <- answer{raw, err}
	}()
	grace := directGrace
	if d, ok := ctx.Deadline(); ok {
		grace = min(grace, time.Until(d)/4)
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case a := <-done:
		return a.raw, a.err
	case <-t.C:
	}
	if info, err := s.Info(ctx); err == nil && !info.Config.AllowDirect {
		cancel()
		<-done
		return s.GetMsg(ctx, seq, opts...) // the info just read says: a stream message get
	}
	a := <-done
	return a.raw, a.err
}

// directGone reports whether err, from a GetMsg on s, may say that direct
// gets were turned off since s was looked up: s's info allows them, and the
// get found no responder, or timed out while ctx goes on.
func directGone(ctx context.Context, s jetstream.Stream, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	if info := s.CachedInfo(); info == nil || !info.Config.AllowDirect {
		return false
	}
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)
}
