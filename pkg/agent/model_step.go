package agent

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
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
		resp, err := callSafely(inv, "before-model", func() (*model.Response, error) { return cb(ctx, inv.cc, req) })
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
			resp, err := callSafely(inv, "on-model-error", func() (*model.Response, error) { return cb(ctx, inv.cc, req, callErr) })
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

	var last *session.Event
	for _, resp := range responses {
		for _, cb := range inv.callbacks.AfterModel {
			repl, err := callSafely(inv, "after-model", func() (*model.Response, error) { return cb(ctx, inv.cc, resp) })
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
		} else if err := inv.emit(ctx, ev, yield); err != nil {
			return nil, err
		}
		if last != nil && last.Content.HasFunctionCalls() {
			// More than one complete response in one call: keep the calls
			// of the earlier ones too.
			ev = mergeCalls(last, ev)
		}
		last = ev
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

// assignCallIDs gives every function call without an id a unique one, so
// responses can be paired with calls (and a resumed invocation can tell
// which calls are still pending).
func (inv *invocation) assignCallIDs(ev *session.Event) {
	for i, fc := range ev.FunctionCalls() {
		if fc.ID == "" {
			fc.ID = fmt.Sprintf("call-%s-%d-%d", shortID(inv.req.InvocationID), len(inv.history), i)
		}
	}
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
