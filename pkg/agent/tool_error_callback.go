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
//     "retryable":true};
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
		if errors.Is(err, tool.ErrOutcomeUnknown) {
			// A wrapped tool failed after it may have acted (a timed-out
			// refund whose request went out): the answer its record gives
			// a retry, now.
			return tool.Error(tool.ReasonOutcomeUnknown, false,
				"The tool failed after it may have acted; do not call it again. Tell the user it is being checked."), nil
		}
		if isTimeout(err) {
			return tool.Error(tool.ReasonTimeout, true, "The tool timed out; you may try once more."), nil
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

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
