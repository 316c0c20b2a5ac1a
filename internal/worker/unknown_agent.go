package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// unknownAgent handles a request for an agent this worker does not run. The
// request was decoded whole and its subject names its agent (handle checks
// both first), so its invocation id is the one its producer sent;
// undecodable bytes never get here.
//
// A request no invocation record knows is refused as BAD_INPUT ("unknown
// agent"), as DESIGN.md says. One its record answers (a duplicate of a
// finished invocation) is answered from the record, as alreadyDone answers
// any duplicate: in a mixed fleet (or one being upgraded) a redelivered
// duplicate of a completed invocation was refused, and its "failed" result
// was published over the stored "completed" one (left open in the
// twenty-third session). A completed record is final and is answered as
// read; any other is read again and handled under the session's lock, as
// the usual path does: a run or replay elsewhere could otherwise publish
// its newer result before this older one is re-published over it. A busy
// session puts the message back, as for a busy session anywhere.
//
// Any other record (running: its run died or is being stopped; or
// dead-lettered with this request a replay, which must run) shows that a
// worker of the fleet runs the agent: the message is put back with the
// busy session's jittered delay for one of those to take it. Refused, a
// duplicate of a running invocation got "failed: rejected" and then its
// owner's "completed", and a replay (whose DLQ entry the replayer had
// deleted) replaced the user's "queued" with "rejected: unknown agent"
// (found in review of the twenty-fourth session's fix). The
// MaxDeliveries-th time this worker is given it, it is refused after all, with a
// reason saying no worker that runs the agent took it: a fleet that no longer
// runs it must not put it back for ever (the refusal's DLQ entry keeps the
// request, to replay by hand once a worker runs the agent again).
func (w *Worker) unknownAgent(ctx context.Context, j *job) {
	req := j.req
	refusal := fmt.Sprintf("unknown agent %q", req.Agent)
	rec, err := w.deps.Invocations.Get(ctx, req.InvocationID)
	switch {
	case errors.Is(err, session.ErrInvocationNotFound):
		// The record was just read: the refusal answers (no second read).
		w.deadLetterRaw(ctx, j, taxonomy.BadInput, refusal, false)
		return
	case err != nil:
		w.nakInfra(j, "read the record of a request for an agent this worker does not run", err)
		return
	case rec.Status == session.InvocationCompleted:
		w.alreadyDone(ctx, j, rec)
		return
	}
	key := session.Key{App: req.Agent, UserID: req.UserID, SessionID: req.SessionID}
	owner := fmt.Sprintf("%s/%s/%d/%d", w.cfg.Name, req.InvocationID, j.meta.Sequence.Stream, j.delivered)
	if _, err := w.deps.Locker.Acquire(ctx, key, owner, w.cfg.SessionLease); errors.Is(err, session.ErrLocked) {
		d := w.cfg.busyNakDelay()
		j.logAt(zerolog.DebugLevel).Err(err).Dur("delay", d).Msg("session busy; Nak with delay")
		w.deps.Metrics.message(w.agentLabel(req.Agent), "nak_busy")
		_ = j.msg.NakWithDelay(d)
		return
	} else if err != nil {
		// The store may have taken the lock before its reply was lost:
		// give it back, as handle does, or the session's real owner is
		// kept out for a whole lease (found in review of the
		// twenty-fourth session's fix).
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		_ = w.deps.Locker.Release(rctx, key, owner)
		cancel()
		w.nakInfra(j, "acquire session lock", err)
		return
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := w.deps.Locker.Release(rctx, key, owner); err != nil && !errors.Is(err, session.ErrNotOwner) {
			j.logAt(zerolog.WarnLevel).Err(err).Msg("release session lock")
		}
	}()
	rec, err = w.deps.Invocations.Get(ctx, req.InvocationID)
	if err != nil {
		// Put back, as for an outage (a record whose retention ended in
		// between is not found again: the redelivery refuses the request).
		w.nakInfra(j, "read the record of a request for an agent this worker does not run", err)
		return
	}
	if w.alreadyDone(ctx, j, rec) {
		return
	}
	// The bound counts this worker's own put-backs of the message, not its
	// deliveries: a busy session, a requeue or a restart on the workers
	// that run the agent are deliveries too, and a replay that had waited
	// on a busy session was refused on its first landing here (found in
	// review of the twenty-fourth session's fix).
	if n := w.noAgent.note(j.meta.Sequence.Stream); n < w.cfg.MaxDeliveries {
		d := w.cfg.busyNakDelay()
		j.logAt(zerolog.InfoLevel).Str("status", string(rec.Status)).Dur("delay", d).
			Msg("request for an agent this worker does not run, whose invocation the fleet ran; Nak with delay for a worker that runs it")
		w.deps.Metrics.message(w.agentLabel(req.Agent), "nak_no_agent")
		_ = j.msg.NakWithDelay(d)
		return
	}
	w.noAgent.forget(j.meta.Sequence.Stream)
	// Refused over the record, deliberately: nobody will run it here, and
	// its producer is told so (deadLetterRaw without the record check).
	w.deadLetterRaw(ctx, j, taxonomy.BadInput, fmt.Sprintf("%s: this worker was given it %d times and no worker that runs the agent took it, though its invocation record (%s) shows the fleet ran it",
		refusal, w.cfg.MaxDeliveries, rec.Status), false)
}
