package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/internal/cooldown"
	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/envelope"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// HeaderFirstFailedAt carries, on a replayed request, when the invocation
// first failed (RFC 3339), so DLQ entries keep it across replays.
const HeaderFirstFailedAt = "Agent-First-Failed-At"

// job is one message being handled.
type job struct {
	msg       jetstream.Msg
	meta      *jetstream.MsgMetadata
	delivered int
	replay    int
	firstFail time.Time
	req       *envelope.Request
	started   time.Time
	log       zerolog.Logger // the worker's; logAt adds the request's fields
	// attemptsBase is the record's attempt count when this replay
	// generation began (see Record.AttemptsBase).
	attemptsBase int
	// budgetBase is the invocation's uncharged model calls (see
	// Record.BudgetBase): from its record, then from this run's outcome.
	budgetBase int
	// inProgressGivenBack counts the given-back runs another owner's claim
	// ended (see Record.InProgressGivenBack).
	inProgressGivenBack int
	// The session lock, while held: its key, owner token and renewer.
	// released is set once the Gate's Finish released it.
	key      session.Key
	owner    string
	renewer  *session.Renewer
	released bool
	// unstored are the invocation's last events, left to the worker
	// (agent.RunRequest.DeferFinalWrite) to store with its completion
	// record, in sessions.
	unstored []*session.Event
	sessions session.Service
}

// handleSafely handles one message; a panic anywhere in it is logged and
// the message is put back, never lost and never crashing the worker.
//
// A message the worker panics on again and again (a poison message: a bug
// its bytes trigger before the run limit can count a run) is not put back
// for ever: from its MaxDeliveries-th delivery on, a panic dead-letters it
// (UNKNOWN, with the request, for a person to replay after the fix) and
// terminates it.
func (w *Worker) handleSafely(ctx context.Context, msg jetstream.Msg) {
	defer func() {
		if p := recover(); p != nil {
			w.log.Error().Interface("panic", p).Bytes("stack", debug.Stack()).Msg("panic while handling a message; Nak with delay")
			w.afterPanic(ctx, msg, p)
		}
	}()
	w.handle(ctx, msg)
}

// afterPanic puts a message the worker panicked on back, or dead-letters it
// once this worker panicked on it MaxDeliveries times (see handleSafely;
// deliveries put back for a busy session, a cooldown or a store outage do
// not count, as for the run limit). A failure or a panic of its own puts
// the message back.
func (w *Worker) afterPanic(ctx context.Context, msg jetstream.Msg, p any) {
	defer func() {
		if q := recover(); q != nil {
			w.log.Error().Interface("panic", q).Msg("panic while dead-lettering a message the worker panicked on; Nak with delay")
			_ = msg.NakWithDelay(w.cfg.InfraBackoffMax)
		}
	}()
	meta, err := msg.Metadata()
	if err != nil {
		_ = msg.NakWithDelay(w.cfg.InfraBackoffMax)
		return
	}
	// With the panics its requeued-from copies carried (HeaderPriorPanics).
	n := w.notePanic(meta.Sequence.Stream) + priorPanics(msg.Headers())
	if n < w.cfg.MaxDeliveries {
		_ = msg.NakWithDelay(w.cfg.InfraBackoffMax)
		return
	}
	j := &job{msg: msg, started: time.Now(), log: w.log, meta: meta, delivered: deliveries(meta, msg.Headers())}
	j.replay, j.firstFail = replayHeaders(msg.Headers())
	// The panic value is a bug's text: sanitised (no host, path or
	// secret), never the stack (that went to the log line above).
	reason := tool.SanitizeString(fmt.Sprintf("the worker panicked handling this message %d times (limit %d): %v; "+
		"a bug: the workers' logs hold the stack; replay after the fix", n, w.cfg.MaxDeliveries, p))
	req, err := envelope.DecodeRequest(msg.Data(), w.maxRequestBytes())
	if err != nil {
		// No invocation record to keep: the bytes as they came.
		w.forgetPanics(meta.Sequence.Stream)
		w.deadLetterRaw(ctx, j, taxonomy.Unknown, reason, true)
		return
	}
	j.req = req
	// A finished record of this generation means the panic came on a
	// duplicate: the work is done or dead-lettered already, and only the
	// ack was missing (no second DLQ entry, no second result: found in
	// review, twenty-first session: a duplicate of a dead letter was
	// dead-lettered again as UNKNOWN and its user got a second answer).
	switch cur, err := w.deps.Invocations.Get(ctx, req.InvocationID); {
	case err == nil && w.alreadyDone(ctx, j, cur):
		w.forgetPanics(meta.Sequence.Stream)
		return
	case err == nil:
		// The record's bases are kept, as every dead letter keeps them: a
		// forced replay's budget reset outlives its panics (found in
		// review, twenty-first session: the panic's record wrote 0).
		j.takeBases(cur)
	case !errors.Is(err, session.ErrInvocationNotFound):
		w.nakInfra(j, "read the record of a message the worker panicked on", err)
		return
	}
	// The DLQ entry first, as deadLetter does (found in review, eighteenth
	// session: the record went first, and when the publish then failed the
	// redelivery found the dead_lettered record and acked it as a
	// duplicate: the request was lost with no DLQ entry). If the publish
	// fails nothing is recorded and the message comes back; a re-publish
	// after a later failure is dropped by the entry's message id. If the
	// record write below fails and the redelivery runs and fails with a
	// class the replayer replays by itself, its dead letter lands beside
	// this entry (publishEntry).
	e, ok := w.publishRaw(ctx, j, taxonomy.Unknown, reason, true)
	if !ok {
		return
	}
	// Then the invocation's record says dead_lettered, as for any dead
	// letter: a replay after the fix then starts a fresh run count (a
	// record left running would be refused by the run limit).
	res := &envelope.Result{V: envelope.Version, InvocationID: req.InvocationID, Status: envelope.StatusDeadLettered,
		ErrorClass: string(taxonomy.Unknown), UserMessage: MsgFailed, Attempts: j.delivered}
	err = w.record(ctx, j, session.InvocationDeadLettered, res, string(taxonomy.Unknown), reason)
	var ce *session.InvocationCompletedError
	switch {
	case errors.As(err, &ce):
		// Completed since the read above: the entry's replay will be
		// acked as a duplicate.
		w.forgetPanics(meta.Sequence.Stream)
		w.alreadyDone(ctx, j, ce.Current)
		return
	case err != nil:
		w.nakInfra(j, "record the dead letter of a message the worker panicked on", err)
		return
	}
	// Then the result, as recorded: if its publish fails, the redelivery
	// finds the record and publishes it again.
	if err := w.publishResult(ctx, res, j.replay); err != nil {
		w.nakInfra(j, "publish the result of a message the worker panicked on", err)
		return
	}
	w.forgetPanics(meta.Sequence.Stream)
	w.termRaw(j, e, taxonomy.Unknown, reason)
}

func (w *Worker) handle(ctx context.Context, msg jetstream.Msg) {
	j := &job{msg: msg, started: time.Now(), log: w.log}
	meta, err := msg.Metadata()
	if err != nil {
		w.log.Error().Err(err).Msg("message without JetStream metadata; terminated")
		_ = msg.Term()
		return
	}
	j.meta, j.delivered = meta, deliveries(meta, msg.Headers())
	j.replay, j.firstFail = replayHeaders(msg.Headers())

	hb := w.beats.start(msg, w.heartbeatInterval)
	defer hb.stop()
	j.msg = beatingMsg{Msg: msg, hb: hb}

	req, err := envelope.DecodeRequest(msg.Data(), w.maxRequestBytes())
	if err != nil {
		w.badInput(ctx, j, err.Error())
		return
	}
	j.req = req
	// The subject names the agent too (DESIGN.md: agent.requests.<agent>),
	// and publish permissions are granted per subject: a body naming
	// another agent than its subject would run that agent for a producer
	// that may publish only to this one (found in review, twenty-second
	// session).
	if want := w.deps.Streams.RequestSubject(req.Agent); msg.Subject() != want {
		w.badInput(ctx, j, fmt.Sprintf("agent %q does not match the subject %q (a request for it goes to %q)", req.Agent, msg.Subject(), want))
		return
	}
	runner, ok := w.deps.Agents[req.Agent]
	if !ok {
		w.unknownAgent(ctx, j)
		return
	}

	if w.cool != nil {
		if until, err := w.cool.Status(ctx, runner.Agent.Model.Name()); err == nil && time.Now().Before(until) {
			d := (&cooldown.OpenError{Until: until}).RetryIn(time.Now())
			j.logAt(zerolog.DebugLevel).Dur("delay", d).Msg("model cooling down fleet-wide; Nak with delay before starting")
			w.deps.Metrics.message(req.Agent, "nak_cooldown")
			_ = j.msg.NakWithDelay(d)
			return
		}
	}

	key := session.Key{App: req.Agent, UserID: req.UserID, SessionID: req.SessionID}
	// The owner token is unique to this message and delivery: re-acquiring
	// with the same token succeeds, so neither a redelivery nor another
	// message of the same invocation (a replay, a late duplicate) may count
	// as the same holder.
	owner := fmt.Sprintf("%s/%s/%d/%d", w.cfg.Name, req.InvocationID, j.meta.Sequence.Stream, j.delivered)
	// One step (one round trip with redissession.Gate): the lock, the
	// record read under it, for a new invocation its running record, and
	// (a SessionGate) the session the runner starts from.
	running := &session.Invocation{ID: req.InvocationID, Session: key, Status: session.InvocationRunning, Result: runningRecord(j.replay, 0, 0, 0)}
	var entry *session.Entry
	if sg, ok := w.gate.(session.SessionGate); ok {
		// The session too, in the same step, for the runner.
		entry, err = sg.EnterWithSession(ctx, key, owner, w.cfg.SessionLease, running, runner.Sessions)
	} else {
		entry, err = w.gate.Enter(ctx, key, owner, w.cfg.SessionLease, running)
	}
	lease, rec := entry.Lease, entry.Existing
	if errors.Is(err, session.ErrLocked) {
		w.sessionBusy(ctx, j, err)
		return
	}
	if lease == nil {
		// The store may have taken the lock before its reply was lost: give
		// it back (fenced by this delivery's owner token, so never another
		// holder's), or the redelivery would wait out the lease.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		_ = w.deps.Locker.Release(rctx, key, owner)
		cancel()
		w.nakInfra(j, "acquire session lock", err)
		return
	}
	renewer := session.KeepAlive(ctx, w.deps.Locker, lease, w.cfg.SessionLease/3)
	j.key, j.owner, j.renewer = key, owner, renewer
	defer func() {
		_ = renewer.Stop()
		if j.released {
			return
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := w.deps.Locker.Release(rctx, key, owner); err != nil && !errors.Is(err, session.ErrNotOwner) {
			j.logAt(zerolog.WarnLevel).Err(err).Msg("release session lock")
		}
	}()
	if err != nil {
		w.nakInfra(j, "read or create the invocation record", err)
		return
	}

	// An existing record was read under the session lock, so another
	// worker cannot finish the invocation between this read and the run.
	if rec != nil {
		if w.alreadyDone(ctx, j, rec) {
			return
		}
		// The limit counts runs of this replay generation (deliveries that
		// started the invocation since it was last dead-lettered), not
		// deliveries put back because the session was busy or the worker's
		// own stores were down: those must never dead-letter work that has
		// not been tried, and a replay starts a fresh count. (Nor runs the
		// cooldown or an idempotency store outage ended: giveBackAttempt.)
		r := j.takeBases(rec)
		if runs := rec.Attempts - j.attemptsBase; runs >= w.cfg.MaxDeliveries {
			// No run recorded why it ended (a crash or kill cannot): the
			// reason says what can end a run, and where to look.
			// The reason is capped (MaxErrorStringLen): the counts, the
			// last error if a run recorded one, then what cuts a run short
			// (the runbook says more).
			reason := fmt.Sprintf("started %d times without finishing (delivered %d), limit %d", runs, j.delivered, w.cfg.MaxDeliveries)
			if rec.Error != "" {
				reason += "; last error: " + rec.Error
			}
			reason += "; runs cut short (crash, kill, shutdown, lost lock or store failure): see the workers' logs"
			w.deadLetter(ctx, j, runner, nil, taxonomy.Unknown, reason)
			return
		}
		if j.replay > r.ReplayCount && msg.Headers().Get(envelope.HeaderFreshBudget) == "true" {
			// A forced replay's reset, taken once at its first run and
			// kept in the running record: a redelivery of the same replay
			// (same header) keeps it instead of resetting the budget
			// again (found in review, seventeenth session: each
			// redelivery got a whole new budget).
			base, err := runner.EarlierModelCalls(ctx, entry.Session, req.UserID, req.SessionID, req.InvocationID)
			if err != nil {
				w.nakInfra(j, "count the earlier model calls of a forced replay", err)
				return
			}
			j.budgetBase = base
		}
		running.Result = runningRecord(j.replay, j.attemptsBase, j.budgetBase, j.inProgressGivenBack)
		if err := w.deps.Invocations.Transition(ctx, running); err != nil {
			var ce *session.InvocationCompletedError
			if errors.As(err, &ce) {
				w.alreadyDone(ctx, j, ce.Current)
				return
			}
			w.nakInfra(j, "mark invocation running", err)
			return
		}
	}

	// Stop at a step boundary on shutdown or when the session lock is lost
	// (another worker may take the session over). Callbacks, not a
	// goroutine waiting for either: an in-flight invocation holds only its
	// own goroutine.
	stop := make(chan struct{})
	var stopOnce sync.Once
	closeStop := func() { stopOnce.Do(func() { close(stop) }) }
	unwatchShutdown := context.AfterFunc(w.stopping, closeStop)
	defer unwatchShutdown()
	unwatchLoss := renewer.AfterLost(func() {
		closeStop()
		j.logAt(zerolog.WarnLevel).Err(renewer.Err()).Msg("session lock lost; stopping at the next step boundary")
	})
	defer unwatchLoss()

	out, runErr := w.invoke(ctx, runner, agent.RunRequest{
		InvocationID: req.InvocationID, UserID: req.UserID, SessionID: req.SessionID,
		Message: req.Message, Stop: stop,
		// Only a replay may reset the budget (see envelope.HeaderFreshBudget),
		// once: the reset is taken at the replay's first run (above) and
		// held in Record.BudgetBase, for its redeliveries and later
		// replays. The run limit still bounds how often it runs. (With
		// no record to hold it, the replay resets as it runs.)
		FreshBudget:         rec == nil && j.replay > 0 && msg.Headers().Get(envelope.HeaderFreshBudget) == "true",
		UnchargedModelCalls: j.budgetBase,
		Session:             entry.Session,
		// The final response is stored in the round trip that records
		// the completion (record).
		DeferFinalWrite: true,
	})
	if out != nil {
		j.budgetBase = out.UnchargedModelCalls
	}
	w.finish(ctx, j, runner, out, runErr)
}

// finish maps the invocation's outcome to exactly one action.
func (w *Worker) finish(ctx context.Context, j *job, runner *agent.Runner, out *agent.Outcome, runErr error) {
	req := j.req
	var coolErr *cooldown.OpenError
	switch {
	case runErr == nil:
		j.unstored, j.sessions = out.Unstored, runner.Sessions
		if cls, degraded := degradedClass(out); degraded {
			// The on-model-error callback answered honestly after the
			// retries were spent; the work itself is still queued. Its
			// answer is stored before anything is published.
			if w.lostLock(ctx, j) {
				return
			}
			if err := w.storeUnstored(ctx, j); err != nil {
				w.storeFailed(ctx, j, runner, out, "invocation", err)
				return
			}
			w.deadLetter(ctx, j, runner, out, cls, "model failed after retries ("+string(cls)+"); the user got a degraded answer")
			return
		}
		if f, failed := inBandDeadLetter(runner, out); failed {
			// The final answer is an in-band failure the policy
			// dead-letters (UNKNOWN: no content, an unknown finish
			// reason): it is no answer. It stays out of the session, so
			// a replay asks the model again; the events before it are
			// stored.
			if w.lostLock(ctx, j) {
				return
			}
			if n := len(j.unstored); n > 0 && j.unstored[n-1] == out.Final {
				j.unstored = j.unstored[:n-1]
			}
			if err := w.storeUnstored(ctx, j); err != nil {
				w.storeFailed(ctx, j, runner, out, "invocation", err)
				return
			}
			// Nor is it what the user is told: the result says MsgFailed
			// (a copy of the outcome without the final response).
			noAnswer := *out
			noAnswer.Final = nil
			// The provider's own words go into the reason: DESIGN's
			// UNKNOWN "keep the raw message, review", and the answer
			// itself is not stored (found in review, eighteenth session).
			// deadLetter sanitises and caps the reason.
			reason := "model answered without a usable response (" + string(f.Class) + " in band: " + f.Code + ")"
			if raw := strings.TrimSpace(f.Raw); raw != "" && raw != f.Code {
				reason += ": " + raw
			}
			w.deadLetter(ctx, j, runner, &noAnswer, f.Class, reason)
			return
		}
		w.complete(ctx, j, runner, out)
	case errors.Is(runErr, agent.ErrStopped) || errors.Is(runErr, context.Canceled):
		j.logAt(zerolog.InfoLevel).Msg("invocation stopped at a step boundary; Nak so another worker resumes it")
		w.deps.Metrics.message(req.Agent, "nak_stopped")
		_ = j.msg.Nak()
	case errors.As(runErr, &coolErr):
		// The cached status may not show this cooldown yet: record it, so
		// the next messages go back before starting (not counting as runs).
		w.cool.Observe(runner.Agent.Model.Name(), coolErr.Until)
		w.giveBackAttempt(ctx, j, "the cooldown", false)
		d := coolErr.RetryIn(time.Now())
		j.logAt(zerolog.InfoLevel).Str("model", coolErr.Model).Dur("delay", d).Msg("model cooling down fleet-wide; Nak with delay")
		w.deps.Metrics.message(req.Agent, "nak_cooldown")
		_ = j.msg.NakWithDelay(d)
	case errors.Is(runErr, session.ErrSessionTooLarge):
		// Not an outage: checked before isInfra (it comes as an
		// *agent.SessionError).
		w.sessionTooLarge(ctx, j, runner, out, runErr)
	case isInfra(runErr):
		if idempotencyOutage(runErr) {
			w.giveBackAttempt(ctx, j, "the idempotency store's outage", errors.Is(runErr, idempotency.ErrInProgress))
		}
		w.nakInfra(j, "invocation", runErr)
	default:
		if w.lostLock(ctx, j) {
			return
		}
		f := taxonomy.FailureFromError(runner.Agent.Model.Name(), runErr)
		w.deadLetter(ctx, j, runner, out, f.Class, runErr.Error())
	}
}

// lostLock reports, before a dead letter (or a completion the gate does
// not fence: complete), whether this delivery no longer holds the session
// lock, and then puts the message back, as for a run stopped at a step
// boundary. A worker that lost its lock (a long pause, a partition: another
// worker took the invocation over after AckWait) must not store its answer
// in the session, dead-letter the invocation, publish a result or ack: the
// other worker may be completing it (found in review, eighteenth session:
// the user got "queued" and then "completed" for one request, and on-call a
// dead letter of completed work). Only redissession.Gate's completion is
// fenced by the lock in the store; so the lock is renewed here, once, to
// learn what the renewer may not have noticed yet. A store that cannot
// answer puts the message back with the infrastructure delay.
func (w *Worker) lostLock(ctx context.Context, j *job) bool {
	if j.renewer == nil {
		return false // no session lock taken (no locker)
	}
	err := j.renewer.Err()
	if err == nil {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = w.deps.Locker.Renew(rctx, j.key, j.owner, w.cfg.SessionLease)
		cancel()
		if err != nil && !errors.Is(err, session.ErrNotOwner) {
			w.nakInfra(j, "confirm the session lock before recording the outcome", err)
			return true
		}
	}
	if err == nil {
		return false
	}
	j.logAt(zerolog.WarnLevel).Err(err).Msg("session lock lost before the outcome was recorded; Nak so the lock's holder finishes the invocation")
	w.deps.Metrics.message(w.agentLabel(j.req.Agent), "nak_stopped")
	_ = j.msg.Nak()
	return true
}

// storeFailed handles a failed write of the invocation's events or record
// (what): a session its store refused as too large is dead-lettered
// (sessionTooLarge), anything else is the worker's own infrastructure and
// the message goes back (nakInfra).
func (w *Worker) storeFailed(ctx context.Context, j *job, runner *agent.Runner, out *agent.Outcome, what string, err error) {
	if errors.Is(err, session.ErrSessionTooLarge) {
		w.sessionTooLarge(ctx, j, runner, out, err)
		return
	}
	w.nakInfra(j, what, err)
}

// sessionTooLarge dead-letters, after its one run, an invocation whose
// session its store refused as too large for it (session.ErrSessionTooLarge:
// on NATS KV a session must fit in one entry). That is no outage: a session
// only grows, so every later append to it fails the same way, and a
// redelivery would run the model and the tools again only to fail again
// (found in review, nineteenth session: it was Nak'ed as the worker's own
// infrastructure until the run limit, then dead-lettered UNKNOWN as "runs
// cut short").
//
// The class is UNKNOWN, deliberately: of the classes the taxonomy never
// replays automatically, it is the one whose rule ("dead-letter for review:
// read the reason first, replay by hand") fits without misleading anyone.
// CALL_BUDGET raises a loop alert and tells the user a person follows up;
// BAD_INPUT means a request that never ran and that its producer may send
// again (producercli resends those); AUTH, NOT_FOUND and BAD_REQUEST page
// for a provider configuration fix. The reason names the store's size
// limit and what to do. A replay (by hand, `--class UNKNOWN --force`) runs
// once and, while the session still does not fit, is dead-lettered again
// the same way with the next replay count: it never loops, and the
// replayer parks the entry after replay.max_replays.
//
// The events the run left to the worker cannot be stored either: they are
// dropped, so the dead letter's record is written without them (the replay
// runs the model for them again). The user is told MsgFailed, not the
// answer the session could not keep.
func (w *Worker) sessionTooLarge(ctx context.Context, j *job, runner *agent.Runner, out *agent.Outcome, err error) {
	if w.lostLock(ctx, j) {
		return
	}
	j.unstored = nil
	j.logAt(zerolog.ErrorLevel).Err(err).Msg("session too large for its store; dead-lettered after one run, not retried")
	var noAnswer *agent.Outcome
	if out != nil {
		o := *out
		o.Final = nil
		noAnswer = &o
	}
	w.deadLetter(ctx, j, runner, noAnswer, taxonomy.Unknown, sessionTooLargeReason(err))
}

// sessionTooLargeReason is the dead letter's reason for err (wrapping
// session.ErrSessionTooLarge): within tool.MaxErrorStringLen, with the
// session's size and the store's limit when the store said them (the
// workers' log line has the whole error).
func sessionTooLargeReason(err error) string {
	limit := "its store's size limit"
	var te *session.TooLargeError
	if errors.As(err, &te) {
		if te.Limit > 0 {
			limit += fmt.Sprintf(" (%d bytes, limit %d)", te.Size, te.Limit)
		} else {
			limit += fmt.Sprintf(" (%d bytes refused)", te.Size)
		}
	}
	return "session exceeds " + limit + "; not retried automatically. " +
		"Raise the limit and replay by hand, or send the request again with a new session id"
}

// isInfra reports failures of the worker's own infrastructure: nothing the
// model did, so the message goes back with a delay and nothing is lost.
func isInfra(err error) bool {
	var se *agent.SessionError
	return errors.As(err, &se) || tool.IsInfrastructure(err) ||
		errors.Is(err, idempotency.ErrStoreUnavailable) ||
		errors.Is(err, idempotency.ErrInProgress)
}

// degradedClass reports whether the final response is a degraded answer
// substituted by taxonomy.OnModelError, and the class it recorded.
// inBandDeadLetter classifies the final response of an invocation that
// ended without an error: a failure whose class the policy dead-letters
// (UNKNOWN: "treating empty content as success" is the seed's failure
// mode) is reported with true. A response a callback substituted, or none
// (a tool ended the invocation), is not.
func inBandDeadLetter(runner *agent.Runner, out *agent.Outcome) (taxonomy.Failure, bool) {
	if out == nil || out.Final == nil || out.Final.Substituted {
		return taxonomy.Failure{}, false
	}
	ev := out.Final
	f, failed := taxonomy.FailureFromResponse(runner.Agent.Model.Name(), &model.Response{
		Content: ev.Content, FinishReason: ev.FinishReason, ErrorCode: ev.ErrorCode, ErrorMessage: ev.ErrorMessage})
	return f, failed && f.Policy().DeadLetter
}

func degradedClass(out *agent.Outcome) (taxonomy.Class, bool) {
	if out == nil || out.Final == nil {
		return "", false
	}
	d := out.Final.Actions.StateDelta
	if deg, _ := d[taxonomy.StateDegraded].(bool); !deg {
		return "", false
	}
	cls, _ := d[taxonomy.StateErrorClass].(string)
	if c, err := taxonomy.ParseClass(cls); err == nil {
		return c, true
	}
	return taxonomy.Unknown, true
}

// giveBackAttempt takes a run that ended for a reason outside the request
// (why, for the log line) out of the run limit's count: one the fleet
// cooldown ended (found in review, eighteenth session: a request that met
// the cooldown MaxDeliveries times in a provider outage was dead-lettered
// UNKNOWN as a crash loop), or one the idempotency layer could not answer
// (idempotencyOutage; found in review, twenty-fifth session: a 30 s outage
// of that store dead-lettered in-flight work the same way). The run was
// counted when it started (the enter step's attempt), and the running
// record written here counts one more, so AttemptsBase goes up by two: the
// limit counts the same runs as before this one. A run that ended any other
// way (a crash, a kill, a lost lock, a session store error) keeps its
// count. Under the session lock only: with the lock lost another worker may
// be running the invocation, and the run stays counted. A failed write
// (the invocation store down too) is logged; the run then counts, as
// before: in an outage of every store the next deliveries fail at the enter
// step, before anything is counted, so that costs an in-flight invocation
// the one run the outage cut short.
//
// A run another owner's claim ended (inProgress: idempotency.ErrInProgress)
// is given back at most 2×MaxDeliveries times in a replay generation
// (Record.InProgressGivenBack; a claim stranded by an outage ends with its
// lease, a few runs' waits); after that such runs count again, and the run
// limit dead-letters the invocation. Such a claim ends with its owner's
// lease when the owner is gone, but a live owner renews it until its tool
// returns, also after the tool's timeout cancelled it (pkg/idempotency
// keeps the claim while a cancelled tool winds down), and pkg/agent waits
// for a tool that ignores its context: a tool call that never returns held
// the key for as long as its worker lived, and every delivery of another
// message of the invocation (a resend, or a redelivery after the owner's
// session lock and heartbeats were lost) was put back for ever, where the
// run limit used to dead-letter it (found in review of the twenty-fifth
// session's fix).
func (w *Worker) giveBackAttempt(ctx context.Context, j *job, why string, inProgress bool) {
	if j.renewer == nil || j.renewer.Err() != nil {
		return
	}
	givenBack := j.inProgressGivenBack
	if inProgress {
		if givenBack >= 2*w.cfg.MaxDeliveries {
			j.logAt(zerolog.WarnLevel).Int("given_back", givenBack).
				Msg("another owner's claim of a tool call ended this run, as it did the given-back runs before it; it counts towards the run limit")
			return
		}
		givenBack++
	}
	rec := &session.Invocation{ID: j.req.InvocationID, Session: j.key, Status: session.InvocationRunning,
		Result: runningRecord(j.replay, j.attemptsBase+2, j.budgetBase, givenBack)}
	if err := w.deps.Invocations.Transition(ctx, rec); err != nil {
		j.logAt(zerolog.WarnLevel).Err(err).Msgf("give back the attempt of a run %s ended; it counts towards the run limit", why)
		return
	}
	j.attemptsBase += 2
	j.inProgressGivenBack = givenBack
}

// idempotencyOutage reports whether runErr is the idempotency layer unable
// to answer: its store unavailable (idempotency.ErrStoreUnavailable: it
// failed closed, the tool did not run) or another owner's claim whose wait
// ran out (idempotency.ErrInProgress: it ends with that owner's lease,
// unless the owner's tool never returns: see giveBackAttempt).
// Neither says anything about the request: pkg/idempotency returns errors
// of their own, which dead-letter, for what a store can never hold (a key
// too long, a result too large). A session store's error
// (*agent.SessionError) is not one, even when it wraps one of these: the
// worker cannot tell an outage from a session or event the store refuses
// for its content (a corrupt session that never loads; an unencodable tool
// result was one, until the twenty-fifth session), which would come back
// for ever if it did not count, so those runs count and the run limit
// dead-letters them (see Config.MaxDeliveries).
func idempotencyOutage(runErr error) bool {
	var se *agent.SessionError
	if errors.As(runErr, &se) {
		return false
	}
	return errors.Is(runErr, idempotency.ErrStoreUnavailable) || errors.Is(runErr, idempotency.ErrInProgress)
}

func (w *Worker) nakInfra(j *job, what string, err error) {
	d := w.cfg.infraDelay(j.delivered)
	j.logAt(zerolog.WarnLevel).Err(err).Dur("delay", d).Msgf("%s failed (own infrastructure); Nak with delay", what)
	agentName := ""
	if j.req != nil {
		agentName = j.req.Agent
	}
	w.deps.Metrics.message(w.agentLabel(agentName), "nak_infra")
	_ = j.msg.NakWithDelay(d)
}

func (w *Worker) ack(j *job, action string) {
	agentName := ""
	if j.req != nil {
		agentName = j.req.Agent
	}
	w.deps.Metrics.message(w.agentLabel(agentName), action)
	// A plain ack, not DoubleAck: waiting for the server's confirmation
	// would cost a round trip per message (about 15 % of the throughput in
	// cmd/loadgen) to learn nothing the worker acts on. The outcome is
	// already recorded, so an ack that gets lost brings a redelivery that
	// the record turns into a "duplicate" ack without running anything.
	// On shutdown the connection is flushed before it closes (internal/app).
	if err := j.msg.Ack(); err != nil {
		j.logAt(zerolog.WarnLevel).Err(err).Msg("ack not sent; a redelivery will be recognised as done")
	}
}

// replayHeaders reads a request's replay count (envelope.HeaderReplayCount)
// and when it first failed (HeaderFirstFailedAt); absent or unusable
// headers give 0 and the zero time.
func replayHeaders(h nats.Header) (replay int, firstFail time.Time) {
	replay, err := strconv.Atoi(h.Get(envelope.HeaderReplayCount))
	if err != nil || replay < 0 || replay > math.MaxInt32 {
		// Only the replayer sets the header, counting from 1; a negative
		// one (a producer's) is a first run, not the internal "no result
		// id" of publishResult. So is one out of range (Atoi gives
		// MaxInt): recorded, the replayer's next count (one more) would
		// wrap to a negative one, a first run, and that replay would be
		// acked as a redelivery of the dead-lettered invocation, unrun.
		replay = 0
	}
	// A time whose UTC year is outside 1..9999 (an offset moves
	// 9999-12-31T23:59:59-01:00 to year 10000) cannot be written again as
	// the replayer writes the header (UTC, RFC 3339): the next replay
	// would lose it. The worker keeps its times in UTC.
	if t, err := time.Parse(time.RFC3339Nano, h.Get(HeaderFirstFailedAt)); err == nil {
		if y := t.UTC().Year(); y >= 1 && y <= 9999 {
			firstFail = t.UTC()
		}
	}
	return replay, firstFail
}

// runningRecord is the Result of a running invocation record.
func runningRecord(replay, attemptsBase, budgetBase, inProgressGivenBack int) json.RawMessage {
	b, _ := json.Marshal(Record{ReplayCount: replay, AttemptsBase: attemptsBase, BudgetBase: budgetBase,
		InProgressGivenBack: inProgressGivenBack})
	return b
}

// logAt starts a log line at level with the request's fields once it is
// decoded. Adding them per line, rather than building a logger with them
// per message, costs nothing for the lines a level turns off.
func (j *job) logAt(level zerolog.Level) *zerolog.Event {
	e := j.log.WithLevel(level)
	if j.req != nil {
		e = e.Str("invocation_id", j.req.InvocationID).Str("session_id", j.req.SessionID).
			Str("agent", j.req.Agent).Int("delivery", j.delivered)
	}
	return e
}

// invoke runs one invocation, counted in the in-flight gauge also when it
// panics (handleSafely recovers it: found in review, sixteenth session,
// the gauge stayed one too high for good).
func (w *Worker) invoke(ctx context.Context, runner *agent.Runner, req agent.RunRequest) (*agent.Outcome, error) {
	w.deps.Metrics.inFlight(1)
	defer w.deps.Metrics.inFlight(-1)
	return runner.Invoke(ctx, req)
}

// takeBases sets j's attempt and budget bases from the invocation's
// record, and returns the record decoded (empty when it cannot be): a
// replay of a finished invocation (a newer replay count) starts a fresh
// run count at the record's attempts; the budget base, a forced replay's
// reset, is kept.
func (j *job) takeBases(rec *session.Invocation) *Record {
	r, _ := DecodeRecord(rec)
	if r == nil {
		r = &Record{}
	}
	j.attemptsBase, j.budgetBase, j.inProgressGivenBack = r.AttemptsBase, r.BudgetBase, r.InProgressGivenBack
	if rec.Status.Terminal() && j.replay > r.ReplayCount {
		j.attemptsBase, j.inProgressGivenBack = rec.Attempts, 0
	}
	return r
}
