package worker

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// HeaderPriorDeliveries carries, on a request a worker requeued (see
// Worker.requeueBusy), how often the earlier copies of it were delivered:
// the worker adds it to the message's own delivery count, so results, DLQ
// entries and the infrastructure backoff count every delivery of the
// request, not only those of its last copy.
const HeaderPriorDeliveries = "Agent-Prior-Deliveries"

// HeaderPriorPanics carries, on a requeued copy, the panics counted on the
// copies it was requeued from (the requeuing worker's own count of them
// and what they carried): the poison-message guard (afterPanic) adds it to
// its own count, so a requeue does not start the count again under the
// copy's new stream sequence (found in review of the requeue, twentieth
// session: a message whose panic left its session lock held was requeued
// for ever and never dead-lettered). A panic counted by a worker that did
// not requeue the message is not carried: like the count itself, it is
// that worker's.
const HeaderPriorPanics = "Agent-Prior-Panics"

// priorPanics reads HeaderPriorPanics (absent or unusable: 0).
func priorPanics(h nats.Header) int {
	n, err := strconv.ParseUint(h.Get(HeaderPriorPanics), 10, 16)
	if err != nil {
		return 0
	}
	return int(n)
}

// RequeueMsgID is the Nats-Msg-Id of the copy that requeues the request
// message at stream sequence seq: requeue:<invocation_id>:<seq>. It is the
// same for every attempt to requeue that one message (a retry after a
// crash between the copy's publish and the original's ack is dropped by the
// requests stream's duplicate window), and differs from every other
// message's: from the original's (its invocation id, or a replay's
// replay:<invocation_id>:<n>), from a copy of a copy (another sequence),
// and from any producer's (invocation ids cannot contain ':').
func RequeueMsgID(invocationID string, seq uint64) string {
	return "requeue:" + invocationID + ":" + strconv.FormatUint(seq, 10)
}

// deliveries is a message's delivery count: its own (metadata) plus those
// of the copies it was requeued from (HeaderPriorDeliveries; absent or
// unusable: 0), at most math.MaxInt32.
func deliveries(meta *jetstream.MsgMetadata, h nats.Header) int {
	n := min(meta.NumDelivered, math.MaxInt32)
	prior, err := strconv.ParseUint(h.Get(HeaderPriorDeliveries), 10, 32)
	if err != nil {
		prior = 0
	}
	return int(min(n+prior, math.MaxInt32))
}

// sessionBusy puts back a message whose session another invocation holds:
// a NakWithDelay(BusyDelay), or, from its BusyRequeueAfter-th delivery on,
// a requeue (requeueBusy). Neither counts towards the run limit.
func (w *Worker) sessionBusy(ctx context.Context, j *job, lockErr error) {
	if n := w.cfg.BusyRequeueAfter; n > 0 && j.meta.NumDelivered >= uint64(n) {
		err := w.requeueBusy(ctx, j)
		if err == nil {
			j.logAt(zerolog.DebugLevel).Err(lockErr).Msg("session still busy; requeued at the end of the requests stream")
			w.deps.Metrics.message(j.req.Agent, "requeued")
			if err := j.msg.Ack(); err != nil {
				// The original comes back after AckWait: a second requeue
				// of it is dropped as a duplicate, or it runs and the copy
				// is acked as a duplicate (or the other way round).
				j.logAt(zerolog.WarnLevel).Err(err).Msg("ack of a requeued message not sent; its redelivery is recognised")
			}
			return
		}
		j.logAt(zerolog.WarnLevel).Err(err).Msg("requeue of a busy session's message failed; Nak with delay")
	}
	// A live holder finishes soon; a crashed one's lease runs out within
	// SessionLease. Busy Naks do not count towards the run limit, so a
	// short delay is cheap and keeps the session responsive. It is
	// jittered (busyNakDelay): messages turned away together came back
	// together, one took the session and the rest waited again together,
	// so a queue for one session drained at one per BusyDelay/2 (found in
	// review, twenty-third session).
	d := w.cfg.busyNakDelay()
	j.logAt(zerolog.DebugLevel).Err(lockErr).Dur("delay", d).Msg("session busy; Nak with delay")
	w.deps.Metrics.message(j.req.Agent, "nak_busy")
	_ = j.msg.NakWithDelay(d)
}

// requeueBusy publishes a copy of the message to the end of the requests
// stream and awaits its PubAck; the caller then acks the message.
//
// Why: a Nak'ed message stays pending on the consumer and keeps its slot of
// MaxAckPending until it is redelivered, and the server redelivers it ahead
// of new messages. A burst for one session (a batch job's conversation) as
// long as MaxAckPending held every slot with busy Naks while one invocation
// of it ran, and no other session's request reached any worker (found in
// review, twentieth session). The copy frees the slot, and other sessions'
// requests published meanwhile come before it.
//
// The copy has the message's subject, body and headers (the replay headers
// among them: a requeued replay stays that replay, with its fresh budget
// and first failure), without the headers the server interprets (Nats-*),
// with Nats-Msg-Id RequeueMsgID and HeaderPriorDeliveries. Nothing is lost
// or run twice: the message is acked only once the copy is stored (a failed
// publish leaves the caller to Nak it), and a crash in between leaves two
// messages of one invocation, which the session lock serialises and the
// invocation record deduplicates exactly as a redelivery: whichever comes
// second finds the completion (or dead letter) and is acked as a duplicate,
// or resumes a run that did not finish; a second requeue of the original
// has the same message id and is dropped within the duplicate window.
// Order within the session is not kept by requeues, no more than by busy
// Naks: whichever message finds the session free first runs.
func (w *Worker) requeueBusy(ctx context.Context, j *job) error {
	m := nats.NewMsg(j.msg.Subject())
	m.Data = j.msg.Data()
	for k, vs := range j.msg.Headers() {
		if len(k) >= 5 && strings.EqualFold(k[:5], "Nats-") {
			continue // Nats-Msg-Id, Nats-Expected-*, Nats-Rollup …: the server acts on them
		}
		m.Header[k] = append([]string(nil), vs...)
	}
	m.Header.Set(HeaderPriorDeliveries, strconv.Itoa(j.delivered))
	if n := priorPanics(j.msg.Headers()) + w.panicCount(j.meta.Sequence.Stream); n > 0 {
		m.Header.Set(HeaderPriorPanics, strconv.Itoa(min(n, math.MaxUint16)))
	} else {
		m.Header.Del(HeaderPriorPanics)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	id := RequeueMsgID(j.req.InvocationID, j.meta.Sequence.Stream)
	if _, err := w.deps.JS.PublishMsg(pctx, m, jetstream.WithMsgID(id),
		jetstream.WithExpectStream(w.deps.Streams.RequestsStream)); err != nil {
		return fmt.Errorf("worker: requeue %s as %s: %w", j.req.InvocationID, id, err)
	}
	// A duplicate PubAck: an earlier attempt stored the copy (its ack of
	// this message was lost); the copy exists or was handled already.
	return nil
}
