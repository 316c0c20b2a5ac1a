package agent

import (
	"maps"
	"sync"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// CallbackContext is what a callback knows about the running invocation. It
// is safe for concurrent use (tool callbacks of parallel calls share it).
type CallbackContext struct {
	invocationID string
	agentName    string
	key          session.Key

	mu     sync.Mutex
	state  map[string]any // session state as of the invocation start + deltas
	delta  map[string]any // writes not yet attached to an event
	events []*session.Event
	end    bool
}

func newCallbackContext(invocationID, agentName string, key session.Key, state map[string]any, events []*session.Event) *CallbackContext {
	return &CallbackContext{
		invocationID: invocationID,
		agentName:    agentName,
		key:          key,
		state:        session.CloneState(state),
		events:       append([]*session.Event(nil), events...),
	}
}

// InvocationID returns the invocation's id.
func (c *CallbackContext) InvocationID() string { return c.invocationID }

// AgentName returns the agent's name.
func (c *CallbackContext) AgentName() string { return c.agentName }

// Session returns the session key.
func (c *CallbackContext) Session() session.Key { return c.key }

// State returns the value of a session state key, including writes made
// during this invocation.
func (c *CallbackContext) State(key string) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.state[key]
	return v, ok
}

// SetState writes a session state key. The write is recorded as a state
// delta on the next event the loop appends. A value that does not encode as
// JSON (NaN, ±Inf, a channel), written by a callback of a tool call, is not
// recorded: it ends the invocation as that call's *ToolError, as the tool's
// own result would.
func (c *CallbackContext) SetState(key string, value any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if value == nil {
		delete(c.state, key)
	} else {
		c.state[key] = value
	}
	if c.delta == nil {
		c.delta = map[string]any{}
	}
	c.delta[key] = value
}

// EndInvocation asks the loop to stop after the current step.
func (c *CallbackContext) EndInvocation() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.end = true
}

// Events returns the events of this invocation so far (not partial ones).
func (c *CallbackContext) Events() []*session.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*session.Event(nil), c.events...)
}

// CompletedTools returns the tool calls of this invocation that have a
// recorded response, in order. A fallback message uses it so that it never
// claims "nothing happened" after a refund ran.
func (c *CallbackContext) CompletedTools() []CompletedTool {
	return CompletedToolsOf(c.Events())
}

// CompletedTool is a tool call of an invocation that has a response.
type CompletedTool struct {
	CallID   string         // CallID is the function call id.
	Name     string         // Name is the tool's name.
	Args     map[string]any // Args are the arguments the tool ran with.
	Response map[string]any // Response is the recorded function response.
}

// Succeeded reports whether the tool's response is not an error map
// (tool.IsErrorMap: a numeric or null status is a failure too).
func (t CompletedTool) Succeeded() bool { return !tool.IsErrorMap(t.Response) }

// OutcomeUnknown reports whether the tool's response says it failed after
// it may have acted: reason tool.ReasonOutcomeUnknown, or an error map with
// tool.KeyMayHaveActed true whatever its reason (ClassifyToolError sets it
// on the timeout of a tool with effects; a tool sets it on its own error
// map when a request went out and no answer came back): neither done nor
// not done, so a message to the user must not say it did not happen. A
// read-only tool's timeout is not. (It honoured may_have_acted only with
// reason "timeout" until the twentieth session's review: refund_order's own
// "orders_service_timeout" after a lost reply read as nothing done.)
func (t CompletedTool) OutcomeUnknown() bool {
	r, _ := t.Response["reason"].(string)
	acted, _ := t.Response[tool.KeyMayHaveActed].(bool)
	return r == tool.ReasonOutcomeUnknown || (acted && tool.IsErrorMap(t.Response))
}

// CompletedToolsOf pairs the function calls in events with their responses
// and returns those that have one, in call order: each call with the
// response that answers it as the loop pairs them (by ID, and for a session
// stored before the loop made call IDs unique, by position), so that a
// degraded answer names every call that a resumed run will not run again.
// A call answered twice keeps its first response, as the model's
// conversation and a resumed run do: the later one answers no call (until
// the twentieth session's review the last response per ID was kept, and a
// session that used one ID for every call listed only its last call).
func CompletedToolsOf(events []*session.Event) []CompletedTool {
	done := completedCalls(events)
	if len(done) == 0 {
		return nil
	}
	out := make([]CompletedTool, 0, len(done))
	for _, d := range done {
		out = append(out, CompletedTool{CallID: d.call.ID, Name: d.response.Name, Args: d.call.Args, Response: d.response.Response})
	}
	return out
}

// completedCall is a function call and the response that answers it.
type completedCall struct {
	call     *model.FunctionCall
	response *model.FunctionResponse
}

// completedCalls returns the calls in events that pairResponses pairs with
// a response, in call order.
func completedCalls(events []*session.Event) []completedCall {
	responses := pairResponses(events, nil)
	if len(responses) == 0 {
		return nil
	}
	out := make([]completedCall, 0, len(responses))
	for _, e := range events {
		if e == nil {
			continue
		}
		for _, fc := range e.FunctionCalls() {
			if p := responses[fc]; p != nil {
				out = append(out, completedCall{call: fc, response: p.FunctionResponse})
			}
		}
	}
	return out
}

func (c *CallbackContext) record(e *session.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, e)
}

// dropUnencodableState removes the pending state writes whose value does
// not encode as JSON, on which the store's append of the next event would
// fail (the worker would take that for a store outage and run the tool
// again), and returns the first one's problem in key order as a
// *resultEncodeError ("state /key..."), or nil when every write encodes.
// The values are walked outside the lock (a MarshalJSON may do anything):
// a key written again meanwhile is removed too, in an invocation that ends
// anyway. State keeps the value: nothing reads it after the invocation
// ends. Found in review of this session's fix, twenty-fifth session.
func (c *CallbackContext) dropUnencodableState() error {
	c.mu.Lock()
	if len(c.delta) == 0 {
		c.mu.Unlock()
		return nil
	}
	pending := maps.Clone(c.delta)
	c.mu.Unlock()
	var first *resultEncodeError
	var firstKey string
	var bad []string
	for k, v := range pending {
		ptr, err := jsonProblem(v)
		if err == nil {
			continue
		}
		bad = append(bad, k)
		if first == nil || k < firstKey {
			first, firstKey = &resultEncodeError{Where: "state /" + pointerToken(k) + ptr, Err: err}, k
		}
	}
	if first == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range bad {
		delete(c.delta, k)
	}
	return first
}

// takeDelta moves pending state writes (not the end flag) into a.
func (c *CallbackContext) takeDelta(a *session.Actions) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.delta) == 0 {
		return
	}
	if a.StateDelta == nil {
		a.StateDelta = map[string]any{}
	}
	for k, v := range c.delta {
		a.StateDelta[k] = v
	}
	c.delta = nil
}

// takeActions moves pending state writes and the end flag into a.
func (c *CallbackContext) takeActions(a *session.Actions) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.delta) > 0 {
		if a.StateDelta == nil {
			a.StateDelta = map[string]any{}
		}
		for k, v := range c.delta {
			a.StateDelta[k] = v
		}
		c.delta = nil
	}
	if c.end {
		a.EndInvocation = true
	}
}

func (c *CallbackContext) ended() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.end
}

func (c *CallbackContext) applyDelta(d map[string]any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	session.ApplyDelta(c.state, d)
}
