package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/dlq"
	"github.com/agentfleet/agentfleet/pkg/envelope"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// User messages of the results (the seed's caller-side texts).
const (
	MsgQueued = "Temporary problem; your request is queued and will be completed later."
	MsgStuck  = "I got stuck on this request. A person will follow up."
	MsgFailed = "Something went wrong and the request was not completed."
)

// Record is what the worker keeps in the invocation record's Result field:
// the published result plus what it needs to tell a replay from a
// redelivery. The replayer reads it too.
type Record struct {
	Result *envelope.Result `json:"result"` // Result is the result envelope that was published.
	// ReplayCount is the request's replay count when it finished.
	ReplayCount int `json:"replay_count"`
	// Class is the failure class, if it failed.
	Class string `json:"class,omitempty"`
	// AttemptsBase is the record's attempt count when the current replay
	// generation began, plus the attempts given back since (runs the fleet
	// cooldown ended, and the running records that gave them back): the
	// run limit counts attempts above it.
	AttemptsBase int `json:"attempts_base,omitempty"`
	// BudgetBase is how many of the invocation's model calls are not
	// charged to its budget when it resumes (agent.Outcome's
	// UnchargedModelCalls of its last run): a forced CALL_BUDGET replay
	// resets the budget, and the replays after it (of a transient failure,
	// say) keep the reset instead of being charged the calls before it.
	BudgetBase int `json:"budget_base,omitempty"`
	// InProgressGivenBack is how many runs of the current replay generation
	// another owner's claim of a tool call ended (idempotency.ErrInProgress)
	// and had their attempt given back: at most 2×Config.MaxDeliveries are
	// (see Worker.giveBackAttempt).
	InProgressGivenBack int `json:"in_progress_given_back,omitempty"`
}

// DecodeRecord reads a Record from an invocation record.
func DecodeRecord(rec *session.Invocation) (*Record, error) {
	var r Record
	if len(rec.Result) == 0 {
		return &r, nil
	}
	if err := json.Unmarshal(rec.Result, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func (w *Worker) complete(ctx context.Context, j *job, runner *agent.Runner, out *agent.Outcome) {
	res := w.resultFor(j, out, envelope.StatusCompleted)
	if out != nil && out.Final != nil { // nil: a tool or callback ended the invocation
		res.Content = out.Final.Content.Text()
		trunc, _ := out.Final.Actions.StateDelta[taxonomy.StateTruncated].(bool)
		res.Truncated = trunc || out.Final.FinishReason == model.FinishReasonMaxTokens
	}
	if err := fitResult(res, w.maxResultBytes()); err != nil {
		w.nakInfra(j, "fit result", err)
		return
	}
	// A worker that lost the session lock completes nothing: another worker
	// may have taken the invocation over and finished it (a dead letter,
	// say), and a final answer is no step boundary the loss stops at. A
	// gate that stores the completion in one step fenced by the lock
	// (redissession.Gate with its own sessions, as internal/app wires it: a
	// session.EventGate) refuses it by itself, so only a loss the renewer
	// reported already is checked for it, without a round trip. The
	// sequential gate (NATS KV, a Redis Cluster) is not fenced: the lock is
	// confirmed first, as before a dead letter (found in review,
	// twenty-third session: a worker paused past its lease recorded
	// completed over the new owner's dead_lettered record and published a
	// second result).
	if j.renewer != nil {
		if _, fenced := w.gate.(session.EventGate); (!fenced || j.renewer.Err() != nil) && w.lostLock(ctx, j) {
			return
		}
	}
	// Record first, as for dead letters: if the result publish then fails,
	// the redelivery finds the completed record and re-publishes the result
	// instead of running the invocation again.
	if err := w.record(ctx, j, session.InvocationCompleted, res, "", ""); err != nil {
		w.storeFailed(ctx, j, runner, out, "record completion", err)
		return
	}
	if err := w.publishResult(ctx, res, j.replay); err != nil {
		w.nakInfra(j, "publish result", err)
		return
	}
	j.logAt(zerolog.InfoLevel).Int("model_calls", res.ModelCalls).Strs("tools", res.ToolsRun).Int64("duration_ms", res.DurationMS).Msg("invocation completed")
	w.observe(j, res)
	w.ack(j, "completed")
}

// deadLetter publishes a DLQ entry (publishEntry, awaiting the PubAck, which
// counts it), records it, then publishes the result and acks. If the DLQ
// publish fails nothing is acked: the message comes back.
func (w *Worker) deadLetter(ctx context.Context, j *job, runner *agent.Runner, out *agent.Outcome, class taxonomy.Class, reason string) {
	req := j.req
	// The reason goes to the DLQ entry, the invocation record (which
	// `dlq-replayer show` prints) and the log lines below: sanitised once
	// for all of them, as the record's contract says (a raw error can name
	// a DSN with its password, or an internal host).
	reason = tool.SanitizeString(reason)
	pol := taxonomy.PolicyFor(class)
	now := time.Now().UTC()
	first := j.firstFail
	if first.IsZero() {
		first = now
	}
	e := &dlq.Entry{
		InvocationID: req.InvocationID, Agent: req.Agent, Class: string(class), Reason: reason,
		Retryable: pol.AutoReplay, DeliveryCount: uint64(j.delivered), ReplayCount: j.replay,
		FirstFailedAt: first, FailedAt: now, Worker: w.cfg.Name, Model: runner.Agent.Model.Name(),
		ToolsCompleted: toolNames(out), SourceSeq: j.meta.Sequence.Stream,
	}
	e.SetRequest(j.msg.Data())
	if err := w.publishEntry(ctx, j, e); err != nil {
		w.nakInfra(j, "publish dead letter", err)
		return
	}

	status, userMsg := envelope.StatusDeadLettered, MsgFailed
	switch {
	case pol.Page:
		status = envelope.StatusFailed
		j.logAt(zerolog.ErrorLevel).Str("class", string(class)).Str("reason", reason).Bool("page", true).
			Msg("PAGE: configuration or request error; dead-lettered for replay after the fix")
	case class == taxonomy.CallBudget:
		userMsg = MsgStuck
		j.logAt(zerolog.ErrorLevel).Str("class", string(class)).Bool("alert", true).
			Msg("ALERT: loop suspected: model-call budget exhausted; dead-lettered for a person")
	case pol.AutoReplay:
		userMsg = MsgQueued
		j.logAt(zerolog.WarnLevel).Str("class", string(class)).Str("reason", reason).Msg("transient failure; dead-lettered for replay")
	default:
		j.logAt(zerolog.ErrorLevel).Str("class", string(class)).Str("reason", reason).Msg("failure dead-lettered for review")
	}
	if out != nil && out.Final != nil && out.Final.Content.Text() != "" {
		// What the user was actually told (a degraded answer that names
		// the tools already completed).
		userMsg = out.Final.Content.Text()
	}
	res := w.resultFor(j, out, status)
	res.ErrorClass, res.UserMessage = string(class), userMsg
	recStatus := session.InvocationDeadLettered
	if status == envelope.StatusFailed {
		recStatus = session.InvocationFailed
	}
	// Record first: if the result publish then fails, the redelivery finds
	// the record, re-publishes the result and acks, instead of running the
	// invocation again.
	if err := w.record(ctx, j, recStatus, res, string(class), reason); err != nil {
		w.nakInfra(j, "record dead letter", err)
		return
	}
	if err := w.publishResult(ctx, res, j.replay); err != nil {
		w.nakInfra(j, "publish result", err)
		return
	}
	w.observe(j, res)
	w.ack(j, string(status))
}

// badInput dead-letters a request that can never run (BAD_INPUT) and
// terminates the message. A request whose invocation id has a finished
// record is not answered over it (see deadLetterRaw).
func (w *Worker) badInput(ctx context.Context, j *job, reason string) {
	w.deadLetterRaw(ctx, j, taxonomy.BadInput, reason, true)
}

// deadLetterRaw dead-letters the message's bytes as they came, with the ids
// it can read from them, publishes a result when it has an invocation id,
// and terminates the message: for a request that never reached a run
// (BAD_INPUT) or one the worker panicked on.
//
// It records no failure generation of the invocation, so its entry is
// published as received (dlq.SourceMsgID): it never takes the message id
// of a later real failure of the same invocation id.
//
// With checkRecord, the refusal is not published over a finished
// invocation's result: a malformed message carrying the id of an invocation
// the fleet ran (a producer's broken retry, or any producer that may publish
// to an agent's subject) published "failed: rejected" over the stored
// "completed" result (one per subject), and the producer's await reported
// completed work as failed (found in review, twenty-fifth session). What is
// published depends on the id's invocation record, read without the session
// lock:
//
//   - none: the refusal.
//   - completed: its result, re-published only if it is not the last one
//     stored (ensureResult). Completed is final: no replay runs it again.
//   - dead_lettered or failed: nothing. The stored result is the record's
//     own or, if the invocation was replayed since this read, the replay's
//     newer one; re-publishing the record's read put the stale
//     dead_lettered result over a replay's completed one (found in review
//     of that fix, twenty-fifth session). unknownAgent re-publishes such a
//     result, but under the session lock.
//   - running: the refusal. The running record may be the refused
//     message's own (its first run cut short, then its redelivery refused
//     by a worker with a lower request limit): with nothing published its
//     producer waited for ever (found in review of that fix). A live run
//     publishes its own result after it, which stays the last one: the
//     record is read again after the refusal's publish, and if it is
//     completed by then (the run's result may have gone before the
//     refusal's) its result is put back (ensureResult).
//
// The DLQ entry keeps the refused bytes with the reason either way. A record
// read that fails puts the message back. Without checkRecord (unknownAgent,
// which read the record itself and decided the refusal answers the
// invocation) the refusal is published.
//
// If the result's publish fails the message is put back, as on every other
// path, instead of terminated with nobody to publish the result (found in
// review, twenty-fifth session: the producer waited for ever). The
// redelivery's DLQ publish is a duplicate of the same entry (dropped by its
// message id within the DLQ's duplicate window, and not counted again by
// this worker: countEntry); it publishes the result and terminates.
func (w *Worker) deadLetterRaw(ctx context.Context, j *job, class taxonomy.Class, reason string, checkRecord bool) {
	id, _ := peekIDs(j.msg.Data())
	var rec *session.Invocation
	if id != "" && checkRecord {
		// Read before the DLQ publish: a store outage then puts the message
		// back with nothing published.
		var err error
		rec, err = w.deps.Invocations.Get(ctx, id)
		switch {
		case errors.Is(err, session.ErrInvocationNotFound):
			rec = nil
		case err != nil:
			w.nakInfra(j, "read the invocation record of a refused request", err)
			return
		}
	}
	e, ok := w.publishRaw(ctx, j, class, reason, false)
	if !ok {
		return
	}
	switch {
	case id == "":
	case rec != nil && rec.Status != session.InvocationRunning:
		if err := w.answerFromRecord(ctx, rec); err != nil {
			w.nakInfra(j, "re-publish the result of a refused request's invocation", err)
			return
		}
	default:
		res := &envelope.Result{V: envelope.Version, InvocationID: id, Status: envelope.StatusFailed,
			ErrorClass: string(class), UserMessage: "The request was rejected: " + reason, Attempts: j.delivered}
		if class != taxonomy.BadInput {
			// Not the request's fault: it waits in the DLQ for a replay.
			res.Status, res.UserMessage = envelope.StatusDeadLettered, MsgFailed
		}
		if err := w.publishResult(ctx, res, -1); err != nil {
			w.nakInfra(j, "publish the dead letter's result", err)
			return
		}
		if rec != nil {
			// A running record: its run may have completed since the read.
			if err := w.answerFromCompleted(ctx, id); err != nil {
				w.nakInfra(j, "re-read the invocation record of a refused request", err)
				return
			}
		}
	}
	w.termRaw(j, e, class, reason)
}

// answerFromRecord re-publishes a completed invocation's recorded result
// unless it is the last one stored (ensureResult). Any other record's result
// is left as it is (see deadLetterRaw), and a record without a readable
// result has none to publish.
func (w *Worker) answerFromRecord(ctx context.Context, rec *session.Invocation) error {
	if rec.Status != session.InvocationCompleted {
		return nil
	}
	r, err := DecodeRecord(rec)
	if err != nil || r.Result == nil {
		return nil
	}
	return w.ensureResult(ctx, r.Result, r.ReplayCount)
}

// answerFromCompleted reads id's invocation record again after a refusal
// was published over a running one, and puts a completed record's result
// back if the refusal went after it (answerFromRecord).
func (w *Worker) answerFromCompleted(ctx context.Context, id string) error {
	rec, err := w.deps.Invocations.Get(ctx, id)
	switch {
	case errors.Is(err, session.ErrInvocationNotFound):
		return nil
	case err != nil:
		return err
	}
	return w.answerFromRecord(ctx, rec)
}

// publishRaw publishes the DLQ entry of the message's bytes as they came,
// with the ids it can read from them, and awaits the PubAck. If the publish
// fails the message is put back and ok is false.
//
// recorded says the caller records the entry as the invocation's failure
// in its replay generation (the invocation record says dead_lettered): the
// entry then has the generation's message id (dlq.EntryMsgID), as a run's
// dead letter has (publishEntry). Otherwise (BAD_INPUT, an undecodable request) it is
// published as received (dlq.SourceMsgID, by the request's stream
// sequence): with the generation's id it was the one the invocation's
// first real failure takes, and a producer's resend of the refused id that
// then failed was dropped as a duplicate of the refusal (found in review,
// twenty-third session).
func (w *Worker) publishRaw(ctx context.Context, j *job, class taxonomy.Class, reason string, recorded bool) (e *dlq.Entry, ok bool) {
	id, agentName := peekIDs(j.msg.Data())
	invocationID := id
	if invocationID == "" {
		invocationID = dlq.DerivedInvocationID(j.meta.Sequence.Stream)
	}
	now := time.Now().UTC()
	first := now
	if !j.firstFail.IsZero() {
		first = j.firstFail // a replayed entry keeps its first failure
	}
	e = &dlq.Entry{
		InvocationID: invocationID, Agent: dlq.AgentToken(agentName), Class: string(class), Reason: reason,
		DeliveryCount: uint64(j.delivered), ReplayCount: j.replay, FirstFailedAt: first, FailedAt: now,
		Worker: w.cfg.Name, SourceSeq: j.meta.Sequence.Stream,
	}
	e.SetRequest(j.msg.Data())
	var err error
	if recorded {
		err = w.publishEntry(ctx, j, e)
	} else {
		var ack *jetstream.PubAck
		if ack, err = w.deps.DLQ.PublishAsReceived(ctx, e); err == nil {
			w.countEntry(ack, class, e.Agent)
		}
	}
	if err != nil {
		w.nakInfra(j, "publish dead letter ("+string(class)+")", err)
		return nil, false
	}
	return e, true
}

// unknownAgentLabel is the agent label of a request for an agent this
// worker does not run (or whose name it cannot read).
const unknownAgentLabel = "_unknown"

// agentLabel is the metrics label of agent: the name of one of the worker's
// agents, or unknownAgentLabel. A producer's request names its agent, so a
// label taken from it as it came would make a series per name any
// producer (or a fuzzer, or a bug) sends, without bound (found in review,
// eighteenth session). The DLQ entry keeps the name.
func (w *Worker) agentLabel(agent string) string {
	if _, ok := w.deps.Agents[agent]; ok {
		return agent
	}
	return unknownAgentLabel
}

// termRaw terminates a message publishRaw dead-lettered (entry e).
func (w *Worker) termRaw(j *job, e *dlq.Entry, class taxonomy.Class, reason string) {
	w.log.Warn().Str("invocation_id", e.InvocationID).Str("class", string(class)).Str("reason", reason).Msg("dead-lettered as received and terminated")
	action := "bad_input"
	if class != taxonomy.BadInput {
		action = "dead_lettered"
	}
	w.deps.Metrics.message(w.agentLabel(e.Agent), action)
	if err := j.msg.Term(); err != nil {
		w.log.Warn().Err(err).Msg("term")
	}
}

// alreadyDone handles a request whose invocation record says it finished.
// It returns false when the request must run (a replay, or a crashed run).
func (w *Worker) alreadyDone(ctx context.Context, j *job, rec *session.Invocation) bool {
	r, err := DecodeRecord(rec)
	if err != nil {
		r = &Record{}
	}
	switch rec.Status {
	case session.InvocationCompleted:
		if r.Result != nil {
			if err := w.ensureResult(ctx, r.Result, r.ReplayCount); err != nil {
				w.nakInfra(j, "re-publish result", err)
				return true
			}
		}
		j.logAt(zerolog.InfoLevel).Msg("invocation already completed; acked without running")
		w.ack(j, "duplicate")
		return true
	case session.InvocationDeadLettered, session.InvocationFailed:
		if j.replay > r.ReplayCount {
			return false // a replay from the DLQ: run (resume) it
		}
		if r.Result != nil {
			if err := w.ensureResult(ctx, r.Result, r.ReplayCount); err != nil {
				w.nakInfra(j, "re-publish result", err)
				return true
			}
		}
		j.logAt(zerolog.InfoLevel).Str("status", string(rec.Status)).Msg("invocation already dead-lettered; redelivery acked")
		w.ack(j, "duplicate")
		return true
	}
	return false
}

func (w *Worker) resultFor(j *job, out *agent.Outcome, status envelope.Status) *envelope.Result {
	res := &envelope.Result{V: envelope.Version, InvocationID: j.req.InvocationID, Status: status,
		Attempts: j.delivered, DurationMS: time.Since(j.started).Milliseconds()}
	if out != nil {
		res.ModelCalls = out.ModelCalls
		res.ToolsRun = toolNames(out)
		// Bounded before it is recorded or logged: the record of a dead
		// letter keeps it as it is (a NATS KV entry is bounded by
		// max_payload too).
		boundToolsRun(res)
	}
	return res
}

// publishResult publishes res and waits for the PubAck. A result of a
// recorded outcome (replay >= 0) carries Nats-Msg-Id
// res-<invocation>-<replay>-<status>: its bytes are fixed by the record, so
// the stream's duplicate window drops a second publish of it (the worker
// that recorded a completion and a duplicate delivery that found the record
// before that worker published it). replay < 0 publishes without one.
func (w *Worker) publishResult(ctx context.Context, res *envelope.Result, replay int) error {
	// A no-op for a result complete already fitted; a result recorded by
	// an earlier version, too long to publish, is cut the same way every
	// time instead of failing every redelivery.
	if err := fitResult(res, w.maxResultBytes()); err != nil {
		return err
	}
	data, err := res.Encode()
	if err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	subject := w.deps.Streams.ResultSubject(res.InvocationID)
	if replay < 0 {
		_, err = w.deps.JS.Publish(pctx, subject, data)
		return err
	}
	ack, err := w.deps.JS.Publish(pctx, subject, data, jetstream.WithMsgID(ResultMsgID(res.InvocationID, replay, res.Status)))
	if err != nil || !ack.Duplicate {
		return err
	}
	// The id was published within the duplicate window. The stream keeps
	// that result unless it lost it since (a purge): then the re-publish
	// must not be dropped, so it goes again without the id.
	if s, err := w.deps.JS.Stream(pctx, w.deps.Streams.ResultsStream); err == nil {
		if last, err := s.GetLastMsgForSubject(pctx, subject); err == nil && bytes.Equal(last.Data, data) {
			return nil
		}
	}
	_, err = w.deps.JS.Publish(pctx, subject, data)
	return err
}

// ResultMsgID is the Nats-Msg-Id of the result of an invocation's recorded
// outcome in one replay generation.
func ResultMsgID(invocationID string, replay int, status envelope.Status) string {
	return fmt.Sprintf("res-%s-%d-%s", invocationID, replay, status)
}

// ensureResult re-publishes a finished invocation's result unless it is
// the last one the results stream holds for the invocation: it may have aged
// out, or its publish failed after the record was written, in which case the
// stream may still hold an earlier result of the invocation (the
// dead_lettered one a replay followed). The result the stream holds may be
// the record's as it is or as publishResult fits it (a record of an earlier
// version, whose tools_run was not bounded yet): either is the same answer.
func (w *Worker) ensureResult(ctx context.Context, res *envelope.Result, replay int) error {
	s, err := w.deps.JS.Stream(ctx, w.deps.Streams.ResultsStream)
	if err != nil {
		return err
	}
	last, err := s.GetLastMsgForSubject(ctx, w.deps.Streams.ResultSubject(res.InvocationID))
	switch {
	case err == nil:
		if want, encErr := res.Encode(); encErr == nil && bytes.Equal(last.Data, want) {
			return nil
		}
		fitted := *res
		if fitResult(&fitted, w.maxResultBytes()) == nil {
			if want, encErr := fitted.Encode(); encErr == nil && bytes.Equal(last.Data, want) {
				return nil
			}
		}
	case !errors.Is(err, jetstream.ErrMsgNotFound):
		return err
	}
	return w.publishResult(ctx, res, replay)
}

func (w *Worker) record(ctx context.Context, j *job, st session.InvocationStatus, res *envelope.Result, class, reason string) error {
	// The record holds the text res.Encode publishes: encoding/json alone
	// replaces each invalid UTF-8 byte with U+FFFD, Encode each run, and a
	// redelivery after a lost ack re-published the recorded result as a
	// second, different one (found in review, twenty-third session).
	res.ReplaceInvalidUTF8()
	payload, err := json.Marshal(Record{Result: res, ReplayCount: j.replay, Class: class, AttemptsBase: j.attemptsBase, BudgetBase: j.budgetBase,
		InProgressGivenBack: j.inProgressGivenBack})
	if err != nil {
		return err
	}
	rec := &session.Invocation{
		ID: j.req.InvocationID, Session: session.Key{App: j.req.Agent, UserID: j.req.UserID, SessionID: j.req.SessionID},
		Status: st, Result: payload, Error: reason,
	}
	if j.renewer == nil || st != session.InvocationCompleted {
		// The events the runner left to us come first: a completion
		// without the lock's renewer (finish stores a degraded answer's
		// before its dead letter is published, so none are left then).
		if err := w.storeUnstored(ctx, j); err != nil {
			return err
		}
		// A dead letter keeps the lock until its result is published: a
		// replay that took the session at once could otherwise publish
		// its newer result first, and this older one would end up last.
		return w.deps.Invocations.Transition(ctx, rec)
	}
	// Completed is final: whoever takes the session next finds the record
	// with its result, runs nothing and can only re-publish these same
	// bytes. So the final events, the record and the lock's release go
	// together (one round trip with redissession.Gate); the result publish
	// and the ack that follow write nothing to the session. On Redis the
	// step is fenced by the lock: a worker that lost it writes nothing (an
	// ErrNotOwner), and the redelivery resumes the invocation from what
	// the session holds, as after any failure here. (The sequential gate
	// of the NATS-only mode is not fenced, no more than its appends:
	// complete confirms the lock just before, as for a dead letter.)
	_ = j.renewer.Stop()
	evs := j.unstored
	j.unstored = nil
	released, err := session.FinishWithEvents(ctx, w.gate, j.sessions, rec, j.key, j.owner, evs)
	j.released = released
	return err
}

// storeUnstored stores the events the runner left to the worker
// (agent.RunRequest.DeferFinalWrite), once.
func (w *Worker) storeUnstored(ctx context.Context, j *job) error {
	if len(j.unstored) == 0 {
		return nil
	}
	evs := j.unstored
	j.unstored = nil
	if err := session.AppendEvents(ctx, j.sessions, j.key, evs); err != nil {
		return fmt.Errorf("store the final events: %w", err)
	}
	return nil
}

func (w *Worker) observe(j *job, res *envelope.Result) {
	if w.deps.Metrics != nil {
		w.deps.Metrics.Duration.WithLabelValues(j.req.Agent, string(res.Status)).Observe(time.Since(j.started).Seconds())
	}
}

func toolNames(out *agent.Outcome) []string {
	if out == nil {
		return nil
	}
	names := make([]string, 0, len(out.CompletedTools))
	for _, t := range out.CompletedTools {
		names = append(names, t.Name)
	}
	return names
}

// peekIDs extracts a valid invocation id and agent from a request that
// failed validation, so its producer still gets a result.
func peekIDs(data []byte) (invocationID, agentName string) {
	var p struct {
		InvocationID string `json:"invocation_id"`
		Agent        string `json:"agent"`
	}
	if len(data) > 1<<20 {
		return "", ""
	}
	// A value of the wrong type elsewhere ("agent": 7) does not stop
	// encoding/json filling the other fields: only a document that is not
	// JSON leaves nothing to read.
	var te *json.UnmarshalTypeError
	if err := json.Unmarshal(data, &p); err != nil && !errors.As(err, &te) {
		return "", ""
	}
	if envelope.ValidID(p.InvocationID) {
		invocationID = p.InvocationID
	}
	if envelope.ValidID(p.Agent) {
		agentName = p.Agent
	}
	return invocationID, agentName
}
