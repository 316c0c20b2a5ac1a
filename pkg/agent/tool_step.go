package agent

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// toolResult is one call's outcome.
type toolResult struct {
	call     *model.FunctionCall
	response map[string]any
	actions  session.Actions
	err      error // escalation: no callback answered
}

// runTools runs calls concurrently (bounded by MaxParallelTools), waits for
// all of them, records one function-response event holding every answered
// call in call order, and then returns the first escalated error, if any. A
// failing branch therefore never loses the results of the others: the
// event is stored before the invocation ends (with the next model response,
// or by the end's flush, or at once; see below), also when the invocation
// was cancelled, and a resumed invocation runs only the failed call again.
func (inv *invocation) runTools(ctx context.Context, calls []*model.FunctionCall, yield func(*session.Event, error) bool) (ended bool, err error) {
	results := make([]toolResult, len(calls))
	if len(calls) == 1 {
		// The common case runs here: a goroutine would only add a fresh
		// stack for the validation and the tool to grow again.
		results[0] = inv.runTool(ctx, calls[0])
	} else {
		sem := make(chan struct{}, inv.agent.MaxParallelTools)
		var wg sync.WaitGroup
		for i, call := range calls {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				results[i] = inv.runTool(ctx, call)
			}()
		}
		wg.Wait()
	}

	ev := &session.Event{Author: inv.agent.Name, Content: &model.Content{Role: model.RoleUser}}
	var firstErr error
	for _, res := range results {
		if res.err != nil {
			if firstErr == nil {
				firstErr = res.err
			}
			continue
		}
		ev.Content.Parts = append(ev.Content.Parts, &model.Part{FunctionResponse: &model.FunctionResponse{
			ID: res.call.ID, Name: res.call.Name, Response: res.response,
		}})
		if res.actions.StateDelta != nil {
			if ev.Actions.StateDelta == nil {
				ev.Actions.StateDelta = map[string]any{}
			}
			for k, v := range res.actions.StateDelta {
				ev.Actions.StateDelta[k] = v
			}
		}
		if res.actions.EndInvocation {
			ev.Actions.EndInvocation = true
		}
	}
	if len(ev.Content.Parts) > 0 {
		if _, batches := inv.r.Sessions.(session.BatchAppender); batches && !inv.req.Stream {
			// Stored with the next model response (or by the flush at the
			// end), one write fewer per step: the model response that asked
			// for these calls is stored already, so a crash before that
			// write resumes by running them again, where an effectful
			// tool's idempotency key returns its stored result. A
			// streaming caller gets the event before the next model's
			// output instead, so it is stored and yielded now; so is it
			// for a store without batches, where holding saves no write.
			// That write outlives a cancelled invocation, as modelStep's
			// does for the model's responses and the end's flush does for
			// held events: a call that ran (a refund) keeps its response,
			// so a resumed invocation does not run it again (found in
			// review, twenty-second session). The invocation then ends
			// with the context's error (the interrupted call's, or the
			// loop's check before the next model call).
			inv.holdToYield(ev)
		} else if err := inv.emit(context.WithoutCancel(ctx), ev, yield); err != nil {
			return false, err
		}
	}
	if firstErr != nil {
		return false, firstErr
	}
	return ev.Actions.EndInvocation || inv.cc.ended(), nil
}

// runTool runs one call through validation, the callbacks and the tool.
func (inv *invocation) runTool(ctx context.Context, fc *model.FunctionCall) (res toolResult) {
	name := inv.agent.Name
	res = toolResult{call: fc}
	defer func() {
		// A state write of this call's callbacks (cc.SetState) that does
		// not encode as JSON, whichever way the call ended (an unknown
		// tool's or bad arguments' answer, an escalation): it is dropped,
		// or the append of the next event, or the end's flush, would fail
		// on it, and the invocation end as a *SessionError after all (see
		// below). An answered call ends as a *ToolError; an escalated one
		// keeps its error. With parallel calls, a write of another call's
		// callback may be found here first: the invocation ends either
		// way. Found in review of this session's fix, twenty-fifth
		// session.
		if err := inv.cc.dropUnencodableState(); err != nil {
			inv.logAt(zerolog.ErrorLevel).Str("tool", tool.SanitizeString(fc.Name)).Err(err).
				Msg("a callback's state change does not encode as JSON; the invocation ends")
			if res.err == nil {
				res = toolResult{call: fc, err: &ToolError{Agent: name, Tool: fc.Name, CallID: fc.ID, Err: err}}
			}
		}
	}()
	t := inv.agent.tool(fc.Name)
	if err := ctx.Err(); err != nil {
		// The invocation was cancelled or ran out of time before this call
		// started: it does not start (its callbacks and its tool would run
		// for a caller that gave up, and a tool that ignores its context
		// is waited for). A resumed invocation runs it. An unregistered
		// name gets the bounded label, as unknownTool gives it (found in
		// review, twenty-second session).
		if t == nil {
			inv.r.Metrics.unknownToolCall(name, fc.Name, "interrupted")
		} else {
			inv.r.Metrics.toolCall(name, fc.Name, "interrupted")
		}
		res.err = &ToolError{Agent: name, Tool: fc.Name, CallID: fc.ID, Err: err}
		return res
	}
	call := &ToolCall{ID: fc.ID, Name: fc.Name, Args: fc.Args, Tool: t}

	if t == nil {
		inv.r.Metrics.unknownTool(name, fc.Name)
		inv.logAt(zerolog.WarnLevel).Str("tool", tool.SanitizeString(fc.Name)).Strs("available", inv.agent.ToolNames()).
			Msg("model called an unregistered tool; answered with an unknown_tool error map")
		uerr := fmt.Errorf("%w: %q", tool.ErrUnknownTool, fc.Name)
		m, cbErr := inv.onToolError(ctx, call, uerr)
		if cbErr != nil {
			res.err = cbErr
			return res
		}
		if m == nil {
			m = tool.Error(tool.ReasonUnknownTool, false, "No tool has that name.")
			m["available_tools"] = toAny(inv.agent.ToolNames())
		}
		// SanitizeAll: the callback's map answers a failure whatever its
		// shape (found in review, eighteenth session).
		res.response = sanitizeFallback(m)
		return res
	}

	tc := &tool.Context{InvocationID: inv.req.InvocationID, Session: inv.key, FunctionCallID: fc.ID}
	tctx := tool.WithContext(ctx, tc)

	var result map[string]any
	// failed: result answers the tool's failure (an on-tool-error
	// callback's map), so every string in it is sanitised whatever its
	// shape: {"error": err.Error()} is no error map, and Sanitize would
	// pass the database host and SQL in err to the model (found in review,
	// eighteenth session).
	failed := false
	for _, cb := range inv.callbacks.BeforeTool {
		m, err := callSafely(inv, "before-tool", func() (map[string]any, error) { return cb(tctx, inv.cc, call) })
		if err != nil {
			res.err = err
			return res
		}
		if m != nil {
			result = m
			break
		}
	}

	if result == nil {
		if verr := inv.validator.Validate(t.Declaration(), fc.Args); verr != nil {
			var se *tool.SchemaError
			if errors.As(verr, &se) {
				// The tool's own schema is broken: nothing the model can
				// fix, and no argument can be checked. It ends the
				// invocation (the worker refuses to start with such a
				// tool: Runner.CheckTools).
				inv.r.Metrics.toolCall(name, fc.Name, "bad_schema")
				res.err = &ToolError{Agent: name, Tool: fc.Name, CallID: fc.ID, Err: verr}
				return res
			}
			inv.r.Metrics.toolCall(name, fc.Name, "bad_arguments")
			var ae *tool.ArgumentError
			detail := ""
			if errors.As(verr, &ae) {
				detail = ae.Detail
			}
			m := tool.Error(tool.ReasonBadArguments, false, "Fix the arguments to match the tool's schema and call it again.")
			m["detail"] = detail
			res.response = tool.Sanitize(m)
			return res
		}
		out, err := inv.invokeToolWithin(tctx, t, fc.Args)
		if err != nil && ctx.Err() != nil {
			// The invocation itself was cancelled or ran out of time while
			// the tool ran: not the tool's failure, so no callback turns it
			// into an answer for the model (a resumed invocation runs the
			// call again). It ends the invocation with the context's error.
			inv.r.Metrics.toolCall(name, fc.Name, "interrupted")
			if !errors.Is(err, ctx.Err()) {
				err = fmt.Errorf("%w: %w", ctx.Err(), err)
			}
			res.err = &ToolError{Agent: name, Tool: fc.Name, CallID: fc.ID, Err: err}
			return res
		}
		if err != nil {
			m, cbErr := inv.onToolError(tctx, call, err)
			if cbErr != nil {
				res.err = cbErr
				return res
			}
			if m == nil {
				inv.r.Metrics.toolCall(name, fc.Name, "escalated")
				res.err = &ToolError{Agent: name, Tool: fc.Name, CallID: fc.ID, Err: err}
				return res
			}
			result, failed = m, true
		} else {
			result = out
		}
	}
	if result == nil {
		result = map[string]any{}
	}

	for _, cb := range inv.callbacks.AfterTool {
		m, err := callSafely(inv, "after-tool", func() (map[string]any, error) { return cb(tctx, inv.cc, call, result) })
		if err != nil {
			res.err = err
			return res
		}
		if m != nil {
			result = m
		}
	}
	if failed {
		res.response = sanitizeFallback(result)
	} else {
		res.response = tool.Sanitize(result)
	}
	res.actions = tc.Actions()
	err := checkCallJSON(res.response, res.actions.StateDelta)
	if err == nil {
		// The callbacks' state writes (cc.SetState) go with the next
		// event too (found in review of this session's fix,
		// twenty-fifth session).
		err = inv.cc.dropUnencodableState()
	}
	if err != nil {
		// What the session would store does not encode as JSON (a NaN,
		// a channel): the store's append would fail, and the worker
		// would file that as its own infrastructure down (a
		// *SessionError: Nak, redeliver, run the tool again, until a
		// crash-loop dead letter). It is the tool's bug, which no retry
		// by the model fixes: the call escalates as a *ToolError (one
		// dead letter naming the tool and the member), as an idempotency
		// wrapper's "encode result" error does. The other calls' results
		// are kept (runTools). Found in review, twenty-fifth session.
		inv.r.Metrics.toolCall(name, fc.Name, "bad_result")
		inv.logAt(zerolog.ErrorLevel).Str("tool", fc.Name).Err(err).
			Msg("tool call's result does not encode as JSON; the invocation ends")
		return toolResult{call: fc, err: &ToolError{Agent: name, Tool: fc.Name, CallID: fc.ID, Err: err}}
	}
	if tool.IsErrorMap(result) {
		inv.r.Metrics.toolCall(name, fc.Name, "error_map")
	} else {
		inv.r.Metrics.toolCall(name, fc.Name, "ok")
	}
	return res
}

// invokeToolWithin is invokeTool bounded by the agent's ToolTimeout: an
// error after that time (while ctx is live) becomes a *ToolTimeoutError,
// but a panic: a tool that crashed as its deadline came is a bug to
// escalate, not a timeout the model may retry.
func (inv *invocation) invokeToolWithin(ctx context.Context, t tool.Tool, args map[string]any) (map[string]any, error) {
	d := inv.agent.ToolTimeout
	if d <= 0 {
		return inv.invokeTool(ctx, t, args)
	}
	rctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	out, err := inv.invokeTool(rctx, t, args)
	var pe *tool.PanicError
	if err != nil && rctx.Err() != nil && ctx.Err() == nil && !errors.As(err, &pe) {
		err = &ToolTimeoutError{Tool: t.Name(), After: d, Err: err}
	}
	return out, err
}

// invokeTool calls t.Run, turning a panic into a *tool.PanicError.
func (inv *invocation) invokeTool(ctx context.Context, t tool.Tool, args map[string]any) (out map[string]any, err error) {
	defer func() {
		if p := recover(); p != nil {
			stack := debug.Stack()
			inv.r.Metrics.toolError(inv.agent.Name, t.Name(), "panic")
			inv.logAt(zerolog.ErrorLevel).Str("tool", t.Name()).Interface("panic", p).Bytes("stack", stack).Msg("tool panicked")
			out, err = nil, &tool.PanicError{Tool: t.Name(), Value: p, Stack: stack}
		}
	}()
	out, err = t.Run(ctx, args)
	if err != nil {
		inv.r.Metrics.toolError(inv.agent.Name, t.Name(), "error")
	}
	return out, err
}

// onToolError runs the on-tool-error callbacks, plugins first; the first map
// wins. It returns (nil, nil) when none answers.
func (inv *invocation) onToolError(ctx context.Context, call *ToolCall, err error) (map[string]any, error) {
	for _, cb := range inv.callbacks.OnToolError {
		m, cbErr := callSafely(inv, "on-tool-error", func() (map[string]any, error) { return cb(ctx, inv.cc, call, err) })
		if cbErr != nil {
			return nil, cbErr
		}
		if m != nil {
			return m, nil
		}
	}
	return nil, nil
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// sanitizeFallback sanitises the map an on-tool-error callback answered a
// failure with. A map that says it succeeded ({"status": "ok"}: a cached
// copy, a fallback source) reaches the model as the tool's own result
// would; any other shape answers the failure, and every string in it is
// sanitised (tool.SanitizeAll: {"error": err.Error()} would pass SQL and
// hosts). Found in review, eighteenth session, both ways.
func sanitizeFallback(m map[string]any) map[string]any {
	if st, _ := m["status"].(string); st == "ok" {
		return tool.Sanitize(m)
	}
	return tool.SanitizeAll(m)
}
