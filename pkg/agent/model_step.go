package agent

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// modelStep makes one step's model call (or takes a before-model
// short-circuit), runs the error and after-model callbacks, stores the
// response event and yields it.
func (inv *invocation) modelStep(ctx context.Context, yield func(*session.Event, error) bool) (*session.Event, error) {
	req := inv.buildRequest()

	for _, cb := range inv.callbacks.BeforeModel {
		resp, err := callModelHook(inv, "before-model", func() (*model.Response, error) { return cb(ctx, inv.cc, req) })
		if err != nil {
			return nil, err
		}
		if resp != nil {
			// Short-circuit: no model call, nothing charged to the budget.
			ev := newEventFromResponse(inv.agent.Name, resp)
			ev.ShortCircuited = true
			inv.assignCallIDs(ev)
			return ev, inv.emit(ctx, ev, yield)
		}
	}

	if err := inv.budget.Charge(); err != nil {
		return nil, err
	}

	responses, partialText, callErr := inv.callModel(ctx, req, yield)
	if callErr == errYieldStopped {
		return nil, callErr
	}
	if callErr != nil {
		if partialText != "" {
			// Output reached the caller and then the stream broke: record
			// and show that it was cut off before anything else happens.
			// The write outlives a cancelled invocation (as the end's
			// flush does): it also stores the held user message, and the
			// text the caller saw belongs in the session whatever ended
			// the stream.
			cut := &session.Event{
				Author:       inv.agent.Name,
				Content:      model.NewTextContent(model.RoleModel, partialText),
				CutOff:       true,
				ErrorMessage: callErr.Error(),
			}
			if err := inv.emit(context.WithoutCancel(ctx), cut, yield); err != nil {
				return nil, err
			}
		}
		if ctx.Err() != nil {
			// The invocation was cancelled or ran out of time during the
			// call: the error matches the context's, as runTool's does, so
			// the worker puts the message back instead of classifying the
			// provider's answer to a call its caller gave up (found in
			// review, eighteenth session). errors.As still finds the
			// provider's error.
			err := callErr
			if !errors.Is(err, ctx.Err()) {
				err = fmt.Errorf("%w: %w", ctx.Err(), err)
			}
			return nil, &ModelError{Agent: inv.agent.Name, Model: inv.agent.Model.Name(), AfterOutput: partialText != "", Err: err}
		}
		var substitute *model.Response
		for _, cb := range inv.callbacks.OnModelError {
			resp, err := callModelHook(inv, "on-model-error", func() (*model.Response, error) { return cb(ctx, inv.cc, req, callErr) })
			if err != nil {
				return nil, err
			}
			if resp != nil {
				substitute = resp
				break
			}
		}
		if substitute == nil {
			return nil, &ModelError{Agent: inv.agent.Name, Model: inv.agent.Model.Name(), AfterOutput: partialText != "", Err: callErr}
		}
		responses = []*model.Response{substitute}
	}
	if len(responses) == 0 {
		// The model ended its sequence without a response or an error: an
		// empty response, which a classifier files as UNKNOWN.
		responses = []*model.Response{{}}
	}

	// What the model answered is stored even if the invocation is
	// cancelled as it arrives or while it is stored (found in review,
	// twentieth session: a stream whose last chunk came with the
	// cancellation stored nothing, though the caller had been shown its
	// text, and the held user message was lost with it): like the cut-off
	// marker and the end's flush, the write outlives the cancellation. The
	// invocation then ends with the context's error, before any tool runs.
	sctx := context.WithoutCancel(ctx)
	var last *session.Event
	for _, resp := range responses {
		for _, cb := range inv.callbacks.AfterModel {
			repl, err := callModelHook(inv, "after-model", func() (*model.Response, error) { return cb(ctx, inv.cc, resp) })
			if err != nil {
				return nil, err
			}
			if repl != nil {
				resp = repl
			}
		}
		ev := newEventFromResponse(inv.agent.Name, resp)
		ev.Substituted = callErr != nil
		// A later event of the call that made last, or the substitute for
		// a call whose cut-off marker was just stored: either way the call
		// was charged once, and a resumed run must count it once. The flag
		// is what links the substitute to that marker: a Substituted event
		// right after a CutOff may answer a call of a later run (found in
		// review, nineteenth session).
		ev.SameCall = last != nil || (callErr != nil && partialText != "")
		inv.assignCallIDs(ev)
		if inv.deferFinal && !ev.Content.HasFunctionCalls() {
			// No tool waits for it: the next write or the caller stores
			// it (RunRequest.DeferFinalWrite).
			inv.holdToYield(ev)
		} else if err := inv.emit(sctx, ev, yield); err != nil {
			return nil, err
		}
		if last != nil && last.Content.HasFunctionCalls() {
			// More than one complete response in one call: keep the calls
			// of the earlier ones too.
			ev = mergeCalls(last, ev)
		}
		last = ev
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return last, nil
}

// callModel drives the model's sequence. It yields partial responses as
// partial events and returns the complete responses, the partial text shown
// so far, and the error that ended the call (a panic in the model becomes an
// error).
func (inv *invocation) callModel(ctx context.Context, req *model.Request, yield func(*session.Event, error) bool) (out []*model.Response, partialText string, err error) {
	var shown strings.Builder
	// inCaller is true while the caller's loop body runs (a partial's
	// yield): a panic there is the caller's, not the model's, and goes on
	// to the caller unchanged.
	inCaller := false
	defer func() {
		if inCaller {
			return // not recovered: the caller's panic unwinds as it is
		}
		if p := recover(); p != nil {
			inv.logAt(zerolog.ErrorLevel).Interface("panic", p).Bytes("stack", debug.Stack()).Msg("model panicked")
			out, partialText, err = nil, shown.String(), fmt.Errorf("model %s panicked: %v", inv.agent.Model.Name(), p)
		}
	}()
	mctx := model.WithCallBudget(ctx, inv.budget)
	for resp, rerr := range inv.agent.Model.GenerateContent(mctx, req, inv.req.Stream) {
		if rerr != nil {
			return nil, shown.String(), rerr
		}
		if resp == nil {
			continue
		}
		if resp.Partial {
			shown.WriteString(resp.Content.Text())
			pe := newEventFromResponse(inv.agent.Name, resp)
			pe.Partial = true
			pe.InvocationID = inv.req.InvocationID
			inCaller = true
			more := yield(pe, nil)
			inCaller = false
			if !more {
				return nil, shown.String(), errYieldStopped
			}
			continue
		}
		out = append(out, resp)
	}
	return out, shown.String(), nil
}

// assignCallIDs gives every function call of ev an id that no other call
// or response of the invocation's session uses (the loop owns call ids):
// a call keeps its provider's id unless that id is empty or already used,
// earlier in this response or anywhere in the session history, and then
// gets a fresh one of the loop's. Responses are paired with their calls by
// id (buildContents, pendingCalls, CompletedToolsOf), and an id used twice
// ("call_0" in every response of an OpenAI-compatible server that numbers
// calls per response) lost the second call's answer, gave a later step's
// call an earlier one's result and hid a failed call from a resumed run
// (found in review, twentieth session). The adapters send the stored ids
// back, so a provider only ever sees calls and responses that pair.
//
// A call whose id changes is copied (with its part and ev's content), never
// changed in place: a model may hand out the same response objects again,
// and an event of the history that shares them must keep its id.
func (inv *invocation) assignCallIDs(ev *session.Event) {
	if !ev.Content.HasFunctionCalls() {
		return
	}
	used := inv.usedCallIDs()
	var parts []*model.Part // ev's parts, copied at the first id that changes
	n := 0                  // calls of ev so far
	for i, p := range ev.Content.Parts {
		if p == nil || p.FunctionCall == nil {
			continue
		}
		id := p.FunctionCall.ID
		if id == "" || used[id] {
			id = inv.freshCallID(n, used)
			if parts == nil {
				parts = slices.Clone(ev.Content.Parts)
			}
			cp, fc := *p, *p.FunctionCall
			fc.ID = id
			cp.FunctionCall = &fc
			parts[i] = &cp
		}
		used[id] = true
		n++
	}
	if parts != nil {
		ev.Content = &model.Content{Role: ev.Content.Role, Parts: parts}
	}
}

// usedCallIDs returns the ids of the function calls and responses of the
// session history, and of the calls assignCallIDs has given out: the set is
// kept on the invocation and brought up to date with the events added
// since the last step (rebuilding it from the whole history every step
// cost a long session an eighth more allocations per invocation).
func (inv *invocation) usedCallIDs() map[string]bool {
	if inv.callIDs == nil || inv.callIDsOf > len(inv.history) {
		inv.callIDs, inv.callIDsOf = map[string]bool{}, 0
	}
	addCallIDs(inv.callIDs, inv.history[inv.callIDsOf:])
	inv.callIDsOf = len(inv.history)
	return inv.callIDs
}

// addCallIDs adds the ids of the function calls and responses of events to
// used.
func addCallIDs(used map[string]bool, events []*session.Event) {
	for _, e := range events {
		if e == nil || e.Content == nil {
			continue
		}
		for _, p := range e.Content.Parts {
			switch {
			case p == nil:
			case p.FunctionCall != nil && p.FunctionCall.ID != "":
				used[p.FunctionCall.ID] = true
			case p.FunctionResponse != nil && p.FunctionResponse.ID != "":
				used[p.FunctionResponse.ID] = true
			}
		}
	}
}

// freshCallID returns a loop id for the n-th call of the step's response
// that is not in used.
func (inv *invocation) freshCallID(n int, used map[string]bool) string {
	base := fmt.Sprintf("call-%s-%d-%d", shortID(inv.req.InvocationID), len(inv.history), n)
	id := base
	for k := 2; used[id]; k++ {
		id = fmt.Sprintf("%s-%d", base, k)
	}
	return id
}

func shortID(s string) string {
	if len(s) > 12 {
		return s[len(s)-12:]
	}
	return s
}

func mergeCalls(prev, cur *session.Event) *session.Event {
	merged := *cur
	parts := append([]*model.Part(nil), prev.Content.Parts...)
	if cur.Content != nil {
		parts = append(parts, cur.Content.Parts...)
	}
	merged.Content = &model.Content{Role: model.RoleModel, Parts: parts}
	return &merged
}

// callModelHook is callSafely for a model callback, whose state writes
// (cc.SetState) go with the next event the loop stores: a write that JSON
// cannot encode is dropped and ends the invocation as the callback's
// *CallbackError (or with the callback's own error, if it failed), not as
// the store's append failing on it, a *SessionError the worker takes for
// its own infrastructure down (left open in review of this session's
// fix, fixed in the twenty-fifth session).
func callModelHook(inv *invocation, hook string, fn func() (*model.Response, error)) (*model.Response, error) {
	resp, err := callSafely(inv, hook, fn)
	if serr := inv.cc.dropUnencodableState(); serr != nil {
		inv.logAt(zerolog.ErrorLevel).Str("hook", hook).Err(serr).
			Msg("a callback's state change does not encode as JSON; the invocation ends")
		if err == nil {
			return nil, &CallbackError{Hook: hook, Err: serr}
		}
	}
	return resp, err
}

// callSafely runs a callback of inv, turning an error or a panic into a
// *CallbackError. A panic is logged with its stack through inv's logger,
// as a tool's or a model's is (found in review, eighteenth session: the
// dead letter said only "panic: index out of range" and no log line said
// where); the error's text carries the panic value only, never the stack.
func callSafely[T any](inv *invocation, hook string, fn func() (T, error)) (out T, err error) {
	defer func() {
		if p := recover(); p != nil {
			inv.logAt(zerolog.ErrorLevel).Str("hook", hook).Interface("panic", p).Bytes("stack", debug.Stack()).Msg("callback panicked")
			var zero T
			out, err = zero, &CallbackError{Hook: hook, Err: fmt.Errorf("panic: %v", p)}
		}
	}()
	out, err = fn()
	if err != nil {
		var zero T
		return zero, &CallbackError{Hook: hook, Err: err}
	}
	return out, nil
}
