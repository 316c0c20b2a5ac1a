package agent

import (
	"context"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// BeforeModelCallback runs before each model call. Returning a non-nil
// response skips the model call (it is not counted against the budget) and
// uses that response instead. Returning an error ends the invocation.
type BeforeModelCallback func(ctx context.Context, cc *CallbackContext, req *model.Request) (*model.Response, error)

// AfterModelCallback runs on every non-partial model response, including one
// substituted by an on-model-error callback. Returning a non-nil response
// replaces it. Returning an error ends the invocation.
type AfterModelCallback func(ctx context.Context, cc *CallbackContext, resp *model.Response) (*model.Response, error)

// OnModelErrorCallback runs when a model call fails. The first callback to
// return a non-nil response wins: the response replaces the error (and still
// passes through the after-model callbacks). If all return nil, the
// invocation ends with the original error. Returning nil is therefore a
// deliberate choice to escalate.
type OnModelErrorCallback func(ctx context.Context, cc *CallbackContext, req *model.Request, err error) (*model.Response, error)

// BeforeToolCallback runs before a tool. Returning a non-nil map skips the
// tool and uses the map as its result.
type BeforeToolCallback func(ctx context.Context, cc *CallbackContext, call *ToolCall) (map[string]any, error)

// AfterToolCallback runs on a tool's result map (also one produced by an
// on-tool-error callback). Returning a non-nil map replaces it.
type AfterToolCallback func(ctx context.Context, cc *CallbackContext, call *ToolCall, result map[string]any) (map[string]any, error)

// OnToolErrorCallback runs when a tool returns an error or panics, and when
// the model calls an unknown tool (err wraps tool.ErrUnknownTool and
// call.Tool is nil). The first callback to return a non-nil map wins and the
// map becomes the function response, as if the tool had returned it. If all
// return nil, the invocation ends with the error.
type OnToolErrorCallback func(ctx context.Context, cc *CallbackContext, call *ToolCall, err error) (map[string]any, error)

// ToolCall is one function call as the tool callbacks see it.
type ToolCall struct {
	// ID is the function call id.
	ID string
	// Name is the function name the model asked for.
	Name string
	// Args are the arguments the model sent.
	Args map[string]any
	// Tool is the registered tool, or nil for an unknown name.
	Tool tool.Tool
}

// Callbacks groups the six hook lists. Each list runs in order.
type Callbacks struct {
	BeforeModel  []BeforeModelCallback  // BeforeModel runs before each model call.
	AfterModel   []AfterModelCallback   // AfterModel runs on each non-partial model response.
	OnModelError []OnModelErrorCallback // OnModelError runs when a model call fails.
	BeforeTool   []BeforeToolCallback   // BeforeTool runs before each tool call.
	AfterTool    []AfterToolCallback    // AfterTool runs on each tool result.
	OnToolError  []OnToolErrorCallback  // OnToolError runs when a tool fails or is unknown.
}

// Plugin is a named set of callbacks applied to every agent it is given to.
// Plugin callbacks always run before the agent's own.
type Plugin struct {
	Name string // Name identifies the plugin.
	Callbacks
}

// merged returns the plugins' callbacks followed by the agent's.
func mergeCallbacks(plugins []*Plugin, own Callbacks) Callbacks {
	var out Callbacks
	for _, p := range plugins {
		if p == nil {
			continue
		}
		out.BeforeModel = append(out.BeforeModel, p.BeforeModel...)
		out.AfterModel = append(out.AfterModel, p.AfterModel...)
		out.OnModelError = append(out.OnModelError, p.OnModelError...)
		out.BeforeTool = append(out.BeforeTool, p.BeforeTool...)
		out.AfterTool = append(out.AfterTool, p.AfterTool...)
		out.OnToolError = append(out.OnToolError, p.OnToolError...)
	}
	out.BeforeModel = append(out.BeforeModel, own.BeforeModel...)
	out.AfterModel = append(out.AfterModel, own.AfterModel...)
	out.OnModelError = append(out.OnModelError, own.OnModelError...)
	out.BeforeTool = append(out.BeforeTool, own.BeforeTool...)
	out.AfterTool = append(out.AfterTool, own.AfterTool...)
	out.OnToolError = append(out.OnToolError, own.OnToolError...)
	return out
}
