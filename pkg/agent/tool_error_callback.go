package agent

import (
	"context"
	"errors"
	"net"
	"os"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// ClassifyToolError returns the on-tool-error callback the error-recovery
// seed recommends. It walks the cause chain with errors.As / errors.Is and
// converts only failures the model can act on:
//
//   - a timeout (context.DeadlineExceeded, os.ErrDeadlineExceeded, a
//     net.Error that timed out) → {"status":"error","reason":"timeout",
//     "retryable":true}, with "may_have_acted":true for a tool with effects
//     (wrapped for idempotency: its request may have gone out); a timeout
//     whose error says the outcome is unknown (tool.ErrOutcomeUnknown) of a
//     tool that is not wrapped is "retryable":false, "may_have_acted":true,
//     with a hint not to call it again: no idempotency record stops a
//     second call from acting twice;
//   - invalid arguments (tool.ErrInvalidArguments, e.g. *tool.ArgumentError)
//     → {"status":"error","reason":"bad_arguments","retryable":false,
//     "detail":...} with a sanitised detail.
//
// Infrastructure errors (tool.IsInfrastructure, e.g. an idempotency store
// that fails closed) are never converted, even when they wrap a timeout.
// Everything else returns nil, so the error escalates and ends the
// invocation: turning an authorisation failure into data would invite the
// model to retry it in a loop. An unknown tool is left to the loop's default
// unknown_tool map.
func ClassifyToolError() OnToolErrorCallback {
	return func(ctx context.Context, cc *CallbackContext, call *ToolCall, err error) (map[string]any, error) {
		if errors.Is(err, tool.ErrUnknownTool) || tool.IsInfrastructure(err) {
			return nil, nil
		}
		if isTimeout(err) {
			if errors.Is(err, tool.ErrOutcomeUnknown) && !isWrapped(call) {
				// The tool may have acted (a refund booked, its reply
				// late) and nothing dedups a second call: retrying
				// would act twice. A wrapped tool's retry is answered
				// from its idempotency record, so it stays retryable.
				// Found in review, twentieth session: an unkeyed
				// refund_order cut short by the tool timeout was
				// answered "you may try once more".
				m := tool.Error(tool.ReasonTimeout, false, notAgainHint(call))
				m[tool.KeyMayHaveActed] = true
				return m, nil
			}
			m := tool.Error(tool.ReasonTimeout, true, "The tool timed out; you may try once more.")
			if mayHaveActed(call, err) {
				// An effectful tool's request may have gone out before
				// the deadline (a refund sent, its reply lost): a message
				// to the user must not say it did not happen
				// (CompletedTool.OutcomeUnknown reads this). Found in
				// review, eighteenth session: the degraded answer told
				// the user a timed-out refund was not completed and to
				// try again, under a new invocation id.
				m[tool.KeyMayHaveActed] = true
			}
			return m, nil
		}
		var ae *tool.ArgumentError
		if errors.As(err, &ae) {
			m := tool.Error(tool.ReasonBadArguments, false, "Fix the arguments and call the tool again.")
			m["detail"] = tool.SanitizeString(ae.Detail)
			return m, nil
		}
		if errors.Is(err, tool.ErrInvalidArguments) {
			return tool.Error(tool.ReasonBadArguments, false, "Fix the arguments and call the tool again."), nil
		}
		return nil, nil
	}
}

// mayHaveActed reports whether a failed call's tool has effects: it is
// wrapped for idempotency (it has an Unwrap() tool.Tool method, as
// idempotency.Wrap's tools do), or its error says the outcome is unknown
// (tool.ErrOutcomeUnknown). Read-only tools are not wrapped.
func mayHaveActed(call *ToolCall, err error) bool {
	if errors.Is(err, tool.ErrOutcomeUnknown) {
		return true
	}
	return isWrapped(call)
}

// isWrapped reports whether call's tool is wrapped for idempotency (it has
// an Unwrap() tool.Tool method, as idempotency.Wrap's tools do): a call
// made again under the same key is answered from the first call's record.
func isWrapped(call *ToolCall) bool {
	if call == nil {
		return false
	}
	_, wrapped := call.Tool.(interface{ Unwrap() tool.Tool })
	return wrapped
}

// notAgainHint is the hint of a timeout map for a call that may have acted
// and must not be made again.
func notAgainHint(call *ToolCall) string {
	name := "the tool"
	if call != nil && call.Name != "" {
		name = call.Name
	}
	return "It may have gone through before it timed out; do not call " + name + " again. Tell the user it may have gone through and is being checked."
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
