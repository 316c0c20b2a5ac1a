package tool

import (
	"context"
	"sync"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// Tool is a function the model can call.
type Tool interface {
	// Name is the function name the model uses.
	Name() string
	// Description tells the model what the tool does.
	Description() string
	// Declaration is the declaration sent to the model; its Parameters
	// schema is also used to validate arguments before Run.
	Declaration() *model.ToolDeclaration
	// Run executes the tool. A returned map becomes the function response
	// (use the error-map helpers for failures the model can act on); a
	// returned error goes to the on-tool-error callbacks and, if none
	// answers, ends the invocation.
	Run(ctx context.Context, args map[string]any) (map[string]any, error)
}

// Context is what the agent loop tells a running tool about its call. Read it
// with FromContext.
type Context struct {
	// InvocationID is the invocation the call belongs to.
	InvocationID string
	// Session is the session the invocation runs in.
	Session session.Key
	// FunctionCallID is the id of the function call being served.
	FunctionCallID string

	mu      sync.Mutex
	actions session.Actions
}

// SetState records a session state change, applied when the function
// response event is appended.
func (c *Context) SetState(key string, value any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.actions.StateDelta == nil {
		c.actions.StateDelta = map[string]any{}
	}
	c.actions.StateDelta[key] = value
}

// EndInvocation asks the loop to stop after this step's tool results are
// recorded, without another model call.
func (c *Context) EndInvocation() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.actions.EndInvocation = true
}

// Actions returns a copy of the actions the tool recorded.
func (c *Context) Actions() session.Actions {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := session.Actions{EndInvocation: c.actions.EndInvocation}
	if c.actions.StateDelta != nil {
		out.StateDelta = session.CloneState(c.actions.StateDelta)
	}
	return out
}

type ctxKey struct{}

// WithContext returns ctx carrying tc. The agent loop calls it for every
// tool call; tests may call it to run a tool directly.
func WithContext(ctx context.Context, tc *Context) context.Context {
	return context.WithValue(ctx, ctxKey{}, tc)
}

// FromContext returns the call's Context, or nil outside a tool call.
func FromContext(ctx context.Context) *Context {
	tc, _ := ctx.Value(ctxKey{}).(*Context)
	return tc
}
