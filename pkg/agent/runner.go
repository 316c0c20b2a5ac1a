package agent

import (
	"context"
	"errors"
	"iter"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// Runner runs invocations of one agent against a session service. It is safe
// for concurrent use by many invocations.
type Runner struct {
	// Agent is the agent to run. Required.
	Agent *Agent
	// Sessions stores events and state. Required.
	Sessions session.Service
	// Logger receives warnings (unknown tools, panics, events that could
	// not be stored; an error's text sanitised by tool.SanitizeString: no
	// URLs, hosts or addresses). The zero value logs nothing.
	Logger zerolog.Logger
	// Metrics, if non-nil, counts tool calls and invocations.
	Metrics *Metrics

	// validator caches the tools' resolved argument schemas for every
	// invocation of this runner (resolving a schema per call cost ~8% of a
	// worker's CPU under load).
	validator tool.Validator
}

// CheckTools reports the runner's tools whose parameter schema does not
// resolve (a *tool.SchemaError each, joined), so a process can refuse to
// start with them instead of failing the first invocation that calls one.
// The schemas it resolves are cached for the invocations.
func (r *Runner) CheckTools() error {
	if r.Agent == nil {
		return nil
	}
	var errs []error
	for _, t := range r.Agent.Tools {
		if t == nil {
			continue // Agent.Validate reports it
		}
		errs = append(errs, r.validator.Check(t.Declaration()))
	}
	return errors.Join(errs...)
}

// RunRequest is one invocation to run.
type RunRequest struct {
	// InvocationID identifies the invocation. Running an id that already
	// has events in the session resumes it. Required.
	InvocationID string
	// UserID and SessionID name the session (its app is the agent's name).
	UserID    string
	SessionID string // SessionID identifies the session.
	// Message is the user's message. Required for a new invocation; ignored
	// when resuming (it was stored the first time).
	Message *model.Content
	// Stream asks the model for streaming output; partial events are
	// yielded but not stored.
	Stream bool
	// Stop, when closed, makes the loop stop at the next step boundary (before
	// a model call) with ErrStopped. Unlike cancelling ctx it never aborts a
	// model or tool call half-way. Nil means never.
	Stop <-chan struct{}
	// FreshBudget starts the call budget at zero on resume. By default a
	// resumed invocation's earlier model calls count against its budget, so
	// crash-and-resume cannot turn a looping model into an endless one.
	FreshBudget bool
	// UnchargedModelCalls is how many of a resumed invocation's earlier
	// model calls are not charged to its budget (FreshBudget aside): the
	// Outcome.UnchargedModelCalls of its last run, which a caller that
	// resumes an invocation more than once keeps, so a budget reset by
	// FreshBudget stays reset for the runs after it. At most the earlier
	// calls count; 0 (the default) charges them all.
	UnchargedModelCalls int
	// Session, when set, is the request's session as just read under the
	// invocation's session lock (session.SessionGate): the runner starts
	// from it instead of loading it (one read fewer). A session of another
	// key is ignored, and the runner loads its own.
	Session *session.Session
	// DeferFinalWrite, for Invoke only (Run ignores it), leaves the last
	// write of an invocation that completes to the caller: a model response
	// without function calls is held like a function response, and what is
	// still held when the invocation completes without an error (the final
	// response and the events before it that were not stored yet) is
	// returned in Outcome.Unstored instead of being stored. The caller must
	// store those events, in order, before it treats the invocation as done:
	// the worker does it in the write that records the completion
	// (session.FinishWithEvents), one round trip fewer. An invocation that
	// fails stores them itself, as without this option.
	DeferFinalWrite bool
}

// Run runs (or resumes) one invocation and yields its events as they happen:
// partial streaming events (not stored) and stored events, each appended to
// the session before it is yielded. A model response is stored before the
// tools it asks for run. The user message, and a tool step's function
// responses (unless req.Stream, or the store has no batches), are stored in
// one write with the next model response (or at the end, also when the
// invocation fails): a crash before that write resumes by running those
// tools again, which an effectful tool makes harmless with its idempotency
// key (pkg/idempotency). The sequence ends after the final response, or
// with one non-nil error that ends the invocation (a
// *ModelError, *ToolError, *CallbackError, *SessionError, a
// *model.CallBudgetError, ErrStopped or the context's error). Breaking out of
// the range loop stops the invocation at that point.
func (r *Runner) Run(ctx context.Context, req RunRequest) iter.Seq2[*session.Event, error] {
	return func(yield func(*session.Event, error) bool) {
		inv, err := r.start(ctx, req)
		if err != nil {
			yield(nil, err)
			return
		}
		// Once the caller's loop body has returned false nothing more may
		// be yielded, whatever the invocation still reports (a flush's
		// yields can meet a stop after the run already failed).
		stopped := false
		err = inv.loop(ctx, func(e *session.Event, err error) bool {
			if stopped || !yield(e, err) {
				stopped = true
				return false
			}
			return true
		})
		r.Metrics.invocation(inv.agent.Name, outcomeLabel(err))
		if err != nil && !stopped && !errors.Is(err, errYieldStopped) {
			yield(nil, err)
		}
	}
}

// Outcome summarises a finished invocation.
type Outcome struct {
	// Final is the final model response event (no function calls), or nil
	// if the invocation failed or ended through an end-invocation action
	// set by a tool.
	Final *session.Event
	// Events are the stored events of this run, in order (partial events
	// are not included).
	Events []*session.Event
	// ModelCalls is the number of model calls charged to the budget,
	// including those of earlier runs when resuming.
	ModelCalls int
	// CompletedTools lists the tool calls of the whole invocation that have
	// a response.
	CompletedTools []CompletedTool
	// Resumed is true when the invocation already had events.
	Resumed bool
	// UnchargedModelCalls is how many model calls of earlier runs this run
	// did not charge to the budget: all of them with FreshBudget, else
	// RunRequest.UnchargedModelCalls (at most the calls there were).
	UnchargedModelCalls int
	// Unstored are the last of Events, which the caller must store (in
	// order) because the request set DeferFinalWrite; nil otherwise, and
	// when the invocation failed.
	Unstored []*session.Event
}

// Invoke runs the invocation to its end and returns its outcome. On failure
// the outcome is still returned (with what happened before the error) along
// with the error.
func (r *Runner) Invoke(ctx context.Context, req RunRequest) (*Outcome, error) {
	inv, err := r.start(ctx, req)
	if err != nil {
		return nil, err
	}
	inv.deferFinal = req.DeferFinalWrite
	out := &Outcome{Resumed: inv.resumed}
	err = inv.loop(ctx, func(e *session.Event, _ error) bool {
		if e != nil && !e.Partial {
			out.Events = append(out.Events, e)
			if e.IsFinalResponse() && !e.Content.HasFunctionResponses() {
				out.Final = e
			}
		}
		return true
	})
	r.Metrics.invocation(inv.agent.Name, outcomeLabel(err))
	out.ModelCalls = inv.budget.Used()
	out.UnchargedModelCalls = inv.uncharged
	out.CompletedTools = inv.cc.CompletedTools()
	if err != nil {
		out.Final = nil
	}
	out.Unstored = inv.unstored
	return out, err
}

func outcomeLabel(err error) string {
	switch {
	case err == nil || errors.Is(err, errYieldStopped):
		return "completed"
	case errors.Is(err, ErrStopped), errors.Is(err, context.Canceled):
		return "stopped"
	default:
		return "failed"
	}
}

// errYieldStopped is returned internally when the caller broke out of the
// range loop.
var errYieldStopped = errors.New("agent: caller stopped iterating")

type invocation struct {
	r         *Runner
	agent     Agent
	callbacks Callbacks
	req       RunRequest
	key       session.Key
	cc        *CallbackContext
	budget    *model.CallBudget
	uncharged int              // earlier model calls not charged to budget
	history   []*session.Event // whole session, including this invocation
	// callIDs are the call and response IDs of history[:callIDsOf]
	// (assignCallIDs brings them up to date: history only grows).
	callIDs   map[string]bool
	callIDsOf int
	resumed   bool
	// pending are events applied in memory but not stored yet: the user
	// message waits for the first model response (one write for both), and
	// so does a tool step's function-response event for the next model
	// response (see runTools).
	pending []*session.Event
	// unyielded are the pending events to yield once they are stored (the
	// held function responses; the user message is never yielded).
	unyielded []*session.Event
	// deferFinal holds model responses without function calls too, and
	// leaves what is held at a successful end in unstored for Invoke's
	// caller (RunRequest.DeferFinalWrite).
	deferFinal bool
	unstored   []*session.Event
	validator  *tool.Validator
	log        zerolog.Logger
}

func (r *Runner) start(ctx context.Context, req RunRequest) (*invocation, error) {
	if r.Agent == nil || r.Sessions == nil {
		return nil, errors.New("agent: Runner needs an Agent and a session Service")
	}
	ag := r.Agent.WithDefaults()
	if err := ag.Validate(); err != nil {
		return nil, err
	}
	if req.InvocationID == "" {
		return nil, errors.New("agent: RunRequest.InvocationID is required")
	}
	key := session.Key{App: ag.Name, UserID: req.UserID, SessionID: req.SessionID}
	if err := key.Validate(); err != nil {
		return nil, err
	}
	sess := req.Session
	if sess == nil || sess.Key != key {
		var err error
		if sess, err = r.Sessions.GetOrCreate(ctx, key); err != nil {
			return nil, &SessionError{Op: "load", Err: err}
		}
	}
	prior := sess.InvocationEvents(req.InvocationID)
	inv := &invocation{
		r:         r,
		agent:     ag,
		callbacks: mergeCallbacks(ag.Plugins, ag.Callbacks),
		req:       req,
		key:       key,
		cc:        newCallbackContext(req.InvocationID, ag.Name, key, sess.State, prior),
		budget:    model.NewCallBudget(ag.MaxModelCalls),
		history:   sess.Events,
		resumed:   len(prior) > 0,
		validator: &r.validator,
		log:       r.Logger,
	}
	if inv.resumed {
		earlier := countModelCalls(prior, ag.Name)
		inv.uncharged = min(max(req.UnchargedModelCalls, 0), earlier)
		if req.FreshBudget {
			inv.uncharged = earlier
		}
		inv.budget.Preload(earlier - inv.uncharged)
	}
	return inv, nil
}

// toolProtocolNote is the user-role note the loop adds after a tool
// protocol break, naming the break.
func toolProtocolNote(ev *session.Event) string {
	reason := ev.FinishReason
	if !reason.ToolProtocol() {
		reason = ev.ErrorCode
	}
	return "Your last response could not be used (" + string(reason) + "). " +
		"Call only the declared tools, with arguments that match their schemas, or answer in text."
}

// EarlierModelCalls returns how many model calls the earlier runs of
// invocationID made, as a resumed run counts them from sess (nil: loaded
// from r.Sessions): what FreshBudget leaves uncharged. A caller that must
// keep one reset across later runs (a redelivery of the same forced
// replay) takes it once and passes it as RunRequest.UnchargedModelCalls.
func (r *Runner) EarlierModelCalls(ctx context.Context, sess *session.Session, userID, sessionID, invocationID string) (int, error) {
	if r.Agent == nil || r.Sessions == nil {
		return 0, errors.New("agent: Runner needs an Agent and a session Service")
	}
	key := session.Key{App: r.Agent.Name, UserID: userID, SessionID: sessionID}
	if sess == nil || sess.Key != key {
		var err error
		if sess, err = r.Sessions.GetOrCreate(ctx, key); err != nil {
			return 0, &SessionError{Op: "load", Err: err}
		}
	}
	return countModelCalls(sess.InvocationEvents(invocationID), r.Agent.Name), nil
}

// countModelCalls counts model-response events of an invocation (what its
// earlier runs charged to the budget): not a before-model short-circuit,
// which no run charged, nor the later events of one call (SameCall). A
// response is any agent event that is not function responses (role user):
// a substituted or replaced response may carry no role, and buildContents
// takes it for a model turn too. A cut-off marker always counts: it is the
// first (and, without a substitute, the only) trace of a charged call.
// The substitute for that same call carries SameCall and is not counted
// again; a substitute without it answered a call of its own, also when it
// follows a cut-off marker directly (found in review, nineteenth session:
// run 1's cut-off call and resumed run 2's substituted call counted as
// one). A substitute stored before SameCall was set on it counts as its
// own call: an older same-call pair is counted twice, never once too few.
func countModelCalls(events []*session.Event, agentName string) int {
	n := 0
	for _, e := range events {
		if e.Author != agentName || e.ShortCircuited || e.SameCall || (e.Content != nil && e.Content.Role == model.RoleUser) {
			continue
		}
		// A cut-off without a substitute is the only trace of a call that
		// was charged (found in review, seventeenth session: each resume
		// got it back for free).
		n++
	}
	return n
}

// append stores e (with pending callback state writes), after the held
// events in the same write, and records it. The held events are tried once:
// whatever the write's outcome they are not written again (a write whose
// reply was lost may have stored them; a failed write ends the invocation,
// and its redelivery starts from what the store holds).
func (inv *invocation) append(ctx context.Context, e *session.Event) error {
	e.InvocationID = inv.req.InvocationID
	inv.cc.takeActions(&e.Actions)
	evs := append(inv.pending, e)
	inv.pending = nil
	if err := session.AppendEvents(ctx, inv.r.Sessions, inv.key, evs); err != nil {
		inv.unyielded = nil
		return &SessionError{Op: "append", Err: err}
	}
	inv.history = append(inv.history, e)
	inv.cc.record(e)
	inv.cc.applyDelta(e.Actions.StateDelta)
	return nil
}

// hold records e like append but stores it with the next append (or the
// flush at the end): the user message, which the request still carries if
// the worker dies before that write, and a tool step's function responses
// (see runTools). It is stamped now, so it keeps its place in time.
func (inv *invocation) hold(e *session.Event) {
	e.InvocationID = inv.req.InvocationID
	inv.cc.takeActions(&e.Actions)
	session.Stamp(e, time.Now)
	inv.pending = append(inv.pending, e)
	inv.history = append(inv.history, e)
	inv.cc.record(e)
	inv.cc.applyDelta(e.Actions.StateDelta)
}

// holdToYield holds e (see hold) and yields it once it is stored.
func (inv *invocation) holdToYield(e *session.Event) {
	inv.hold(e)
	inv.unyielded = append(inv.unyielded, e)
}

// yieldStored yields the held events the last write stored, in order (or,
// for DeferFinalWrite, the ones left to the caller).
func (inv *invocation) yieldStored(yield func(*session.Event, error) bool) error {
	evs := inv.unyielded
	inv.unyielded = nil
	for _, e := range evs {
		if !yield(e, nil) {
			return errYieldStopped
		}
	}
	return nil
}

// flush stores held events that no append took along (the invocation ended
// before a model response stored them); like append, it tries once. The
// events it stored are yielded unless the caller has stopped iterating
// (stopped).
func (inv *invocation) flush(ctx context.Context, yield func(*session.Event, error) bool, stopped bool) error {
	if len(inv.pending) == 0 {
		return nil
	}
	evs := inv.pending
	inv.pending = nil
	// State writes since the last event (an on-model-error callback that
	// recorded the failure and escalated) go with the last one, as SetState
	// promises. Not the end flag: an invocation that ends in an error is
	// not finished, and its redelivery or replay must run on.
	last := evs[len(evs)-1]
	inv.cc.takeDelta(&last.Actions)
	inv.cc.applyDelta(last.Actions.StateDelta)
	if err := session.AppendEvents(ctx, inv.r.Sessions, inv.key, evs); err != nil {
		inv.unyielded = nil
		return &SessionError{Op: "append", Err: err}
	}
	if stopped {
		inv.unyielded = nil
		return nil
	}
	return inv.yieldStored(yield)
}

// emit stores e (and what is held), then yields the held events it stored
// and e.
func (inv *invocation) emit(ctx context.Context, e *session.Event, yield func(*session.Event, error) bool) error {
	if err := inv.append(ctx, e); err != nil {
		return err
	}
	if err := inv.yieldStored(yield); err != nil {
		return err
	}
	if !yield(e, nil) {
		return errYieldStopped
	}
	return nil
}

// loop runs the invocation, then stores (and yields) what it still holds. A
// failed flush wins over the run's own error (what it held is not stored:
// an infrastructure failure, so the message goes back), except when the
// caller stopped iterating: then nothing more may be yielded, and the
// failure is only logged. A caller that stops iterating during the flush's
// yields stops the invocation like any other break.
func (inv *invocation) loop(ctx context.Context, yield func(*session.Event, error) bool) error {
	err := inv.steps(ctx, yield)
	if err == nil && inv.deferFinal {
		inv.unstored, inv.pending = inv.pending, nil
		return inv.yieldStored(yield)
	}
	stopped := errors.Is(err, errYieldStopped)
	ferr := inv.flush(context.WithoutCancel(ctx), yield, stopped)
	switch {
	case ferr == nil:
		return err
	case errors.Is(ferr, errYieldStopped):
		if err != nil {
			return err
		}
		return ferr
	case stopped:
		inv.logAt(zerolog.WarnLevel).Str(zerolog.ErrorFieldName, tool.SanitizeString(ferr.Error())).
			Msg("storing held events failed after the caller stopped")
		return err
	}
	if err != nil {
		// Sanitised like the taxonomy's "llm error" line: a model or store
		// error names its endpoint's host, port and resolver (found in
		// review of this session's fix, twenty-third session).
		inv.logAt(zerolog.WarnLevel).Str(zerolog.ErrorFieldName, tool.SanitizeString(err.Error())).
			Msg("invocation failed, and storing its held events failed too")
	}
	return ferr
}

func (inv *invocation) steps(ctx context.Context, yield func(*session.Event, error) bool) error {
	prior := inv.cc.Events()
	if !inv.resumed {
		if inv.req.Message.IsEmpty() {
			return ErrNoMessage
		}
		msg := *inv.req.Message
		msg.Role = model.RoleUser
		inv.hold(&session.Event{Author: session.AuthorUser, Content: &msg})
	} else {
		last := prior[len(prior)-1]
		if last.IsFinalResponse() && !last.Substituted && len(pendingCalls(prior)) == 0 {
			// Already finished: hand back the final event, run nothing. A
			// substituted (degraded) answer is not a finish: run on; nor is
			// a text that came with calls still without a response (one
			// model call that yielded a call and then a text: the first
			// run merged them and ran the call).
			if !yield(last, nil) {
				return errYieldStopped
			}
			return nil
		}
		// A tool or a callback of an earlier run ended the invocation (its
		// event holds the end action): that run stopped after the step,
		// so this one runs at most the step's calls still without a
		// response, and calls no model.
		var endedBy *session.Event
		for _, e := range slices.Backward(prior) {
			if e.Actions.EndInvocation {
				endedBy = e
				break
			}
		}
		// A substituted (degraded) answer that ended it is not a finish,
		// as above: run on, so a replay asks the model again (found in
		// review of this session's fix).
		endedBefore := endedBy != nil && !endedBy.Substituted
		if pending := notSkipped(pendingCalls(prior), prior); len(pending) > 0 {
			ended, err := inv.runTools(ctx, pending, yield)
			if err != nil || ended || endedBefore {
				return err
			}
		} else if endedBefore {
			// Nothing left to run: hand back the event that ended the
			// invocation, as the already-finished path does, so a
			// redelivery ends with the same final answer (an after-model
			// guard's response with text and skipped calls) as the first
			// run (found in review, twenty-second session).
			if !yield(endedBy, nil) {
				return errYieldStopped
			}
			return nil
		}
	}
	for {
		if err := inv.checkStop(ctx); err != nil {
			return err
		}
		ev, err := inv.modelStep(ctx, yield)
		if err != nil {
			return err
		}
		if ev.Actions.EndInvocation || inv.cc.ended() {
			return nil
		}
		calls := ev.FunctionCalls()
		if len(calls) == 0 {
			if ev.ToolProtocolBreak() {
				// A malformed or unexpected call and nothing else: the
				// model may correct itself, within the call budget. A
				// note says what went wrong, so the next request is not
				// the one that failed.
				inv.hold(&session.Event{Author: inv.agent.Name, Content: model.NewTextContent(model.RoleUser, toolProtocolNote(ev))})
				continue
			}
			return nil // final response (possibly in-band failure: the caller classifies it)
		}
		ended, err := inv.runTools(ctx, calls, yield)
		if err != nil || ended {
			return err
		}
	}
}

func (inv *invocation) checkStop(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if inv.req.Stop != nil {
		select {
		case <-inv.req.Stop:
			return ErrStopped
		default:
		}
	}
	return nil
}

func (inv *invocation) buildRequest() *model.Request {
	req := &model.Request{
		Model:             inv.agent.Model.Name(),
		SystemInstruction: inv.agent.Instruction,
		Contents:          buildContents(inv.history),
		Config:            inv.agent.Config,
	}
	for _, t := range inv.agent.Tools {
		req.Tools = append(req.Tools, t.Declaration())
	}
	return req
}

func newEventFromResponse(author string, resp *model.Response) *session.Event {
	return &session.Event{
		Author:       author,
		Content:      resp.Content,
		TurnComplete: resp.TurnComplete,
		FinishReason: resp.FinishReason,
		ErrorCode:    resp.ErrorCode,
		ErrorMessage: resp.ErrorMessage,
		Usage:        resp.Usage,
	}
}

// notSkipped drops from pending the calls of a model response that itself
// carries the end of the invocation: an after-model callback (or a
// before-model short-circuit) ended it there, so its first run skipped
// those calls on purpose, and a resumed run must not make them.
func notSkipped(pending []*model.FunctionCall, prior []*session.Event) []*model.FunctionCall {
	skipped := map[*model.FunctionCall]bool{}
	for i, e := range prior {
		if !e.Actions.EndInvocation {
			continue
		}
		// The ended response and the earlier responses of the same model
		// call (SameCall marks the second and later ones): the step that
		// ended held all their calls.
		for j := i; j >= 0; j-- {
			for _, fc := range prior[j].FunctionCalls() {
				skipped[fc] = true
			}
			if !prior[j].SameCall {
				break
			}
		}
	}
	if len(skipped) == 0 {
		return pending
	}
	return slices.DeleteFunc(pending, func(fc *model.FunctionCall) bool { return skipped[fc] })
}

// logAt starts a log line at level with the invocation's fields (added per
// line: a logger built with them per invocation would cost an allocation
// even when nothing is logged).
func (inv *invocation) logAt(level zerolog.Level) *zerolog.Event {
	return inv.log.WithLevel(level).Str("invocation_id", inv.req.InvocationID).
		Str("session_id", inv.req.SessionID).Str("agent", inv.agent.Name)
}
