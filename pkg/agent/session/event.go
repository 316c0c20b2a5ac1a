package session

import (
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// AuthorUser is the author of events carrying the user's message.
const AuthorUser = "user"

// Event is one thing that happened in a session: the user's message, a model
// response, tool results, or a marker. Every event carries the invocation id
// that produced it. The agent loop appends an event before yielding it, so
// what a caller saw is always in the session.
type Event struct {
	// ID is unique within the session; the service assigns one if empty.
	ID string `json:"id"`
	// InvocationID is the invocation that produced the event.
	InvocationID string `json:"invocation_id"`
	// Author is AuthorUser or the agent's name.
	Author string `json:"author"`
	// Content is the message, model output or function responses.
	Content *model.Content `json:"content,omitempty"`
	// Partial marks a streaming delta; partial events are never stored.
	Partial bool `json:"partial,omitempty"`
	// TurnComplete marks the end of the model's turn.
	TurnComplete bool `json:"turn_complete,omitempty"`
	// CutOff marks output that reached the caller and was then cut off by a
	// failure (the stream broke after partial output). Its Content holds the
	// text the caller saw; it is not sent back to the model.
	CutOff bool `json:"cut_off,omitempty"`
	// Substituted marks a response an on-model-error callback substituted
	// for a failed model call (a degraded answer). It ended that run, but a
	// resumed invocation (a replay from the DLQ) does not take it as the
	// end, and it is not sent back to the model (unless it asked for tools:
	// then the calls are, before their responses).
	Substituted bool `json:"substituted,omitempty"`
	// ShortCircuited marks a response a before-model callback gave instead
	// of a model call (a cache, a guard): it is not charged to the model
	// call budget, also not when a resumed invocation counts its earlier
	// calls.
	ShortCircuited bool `json:"short_circuited,omitempty"`
	// SameCall marks the second and later complete responses of one model
	// call (a provider that yields more than one), and the substitute an
	// on-model-error callback gave for a call whose cut-off marker (the
	// output it had sent) precedes it: that call was charged once, and a
	// resumed invocation counts it once.
	SameCall bool `json:"same_call,omitempty"`
	// FinishReason, ErrorCode and ErrorMessage are copied from the model
	// response (see model.Response).
	FinishReason model.FinishReason `json:"finish_reason,omitempty"`
	ErrorCode    model.FinishReason `json:"error_code,omitempty"`    // ErrorCode is the response's in-band error code.
	ErrorMessage string             `json:"error_message,omitempty"` // ErrorMessage is the provider's message for ErrorCode.
	// Usage is the model call's token accounting, if any.
	Usage *model.Usage `json:"usage,omitempty"`
	// Actions are side effects on the session and the loop.
	Actions Actions `json:"actions,omitzero"`
	// Timestamp is when the event was created; the service sets it if zero.
	Timestamp time.Time `json:"timestamp"`
}

// Actions are what an event asks of the session and the loop.
type Actions struct {
	// StateDelta is merged into the session state when the event is
	// appended. A nil value deletes the key.
	StateDelta map[string]any `json:"state_delta,omitempty"`
	// EndInvocation stops the agent loop after this event.
	EndInvocation bool `json:"end_invocation,omitempty"`
}

// IsFinalResponse reports whether e ends a model turn: a model event that is
// not partial and asks for no function call. A response with no content and
// only an error code is final too: the loop never spins on it. A tool
// protocol break (ToolProtocolBreak) is not: the model is asked again.
func (e *Event) IsFinalResponse() bool {
	if e == nil || e.Partial || e.Author == AuthorUser || e.CutOff || e.ToolProtocolBreak() {
		return false
	}
	if e.Content != nil && e.Content.Role == model.RoleUser {
		return false // a user-role turn of the agent's (function responses, a correction note)
	}
	if e.Actions.EndInvocation {
		return true
	}
	if e.Content.HasFunctionResponses() {
		return false
	}
	return !e.Content.HasFunctionCalls()
}

// ToolProtocolBreak reports whether e is a model response that broke the
// function-calling protocol (its finish reason or error code is a
// model.FinishReason.ToolProtocol reason) and holds no text and no function
// call: nothing reached the caller, so the agent loop asks the model again
// (the TOOL_PROTOCOL rule: the model may correct itself within the call
// budget, which bounds the asking). A short-circuited response is not one:
// no model call made it, none is charged for it, and asking again would
// get the same answer from the same callback.
func (e *Event) ToolProtocolBreak() bool {
	if e == nil || e.Partial || e.CutOff || e.ShortCircuited || e.Author == AuthorUser || e.Actions.EndInvocation {
		return false
	}
	if !e.FinishReason.ToolProtocol() && !e.ErrorCode.ToolProtocol() {
		return false
	}
	return e.Content.Text() == "" && !e.Content.HasFunctionCalls() && !e.Content.HasFunctionResponses()
}

// FunctionCalls returns the function calls in the event's content.
func (e *Event) FunctionCalls() []*model.FunctionCall { return e.Content.FunctionCalls() }

// FunctionResponses returns the function responses in the event's content.
func (e *Event) FunctionResponses() []*model.FunctionResponse {
	return e.Content.FunctionResponses()
}
