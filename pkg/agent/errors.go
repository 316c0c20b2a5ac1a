package agent

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrStopped ends an invocation whose RunRequest.Stop channel was closed: it
// stopped at a step boundary and can be resumed by running the same
// invocation id again.
var ErrStopped = errors.New("agent: invocation stopped at a step boundary")

// ErrNoMessage is returned for a new invocation without a user message.
var ErrNoMessage = errors.New("agent: a new invocation needs a user message")

// ModelError ends an invocation whose model call failed and no on-model-error
// callback substituted a response. Unwrap gives the provider's error, so
// classifiers walk straight through it.
type ModelError struct {
	Agent string // Agent is the agent's name.
	Model string // Model is the model's name.
	// AfterOutput is true when partial output had reached the caller before
	// the failure (the output was marked cut off).
	AfterOutput bool
	// Err is the provider's error; when the invocation's context ended
	// during the call, it is the context's error wrapping the provider's
	// (both match: errors.Is, errors.As).
	Err error
}

// Error implements error.
func (e *ModelError) Error() string {
	return fmt.Sprintf("agent %s: model %s: %v", e.Agent, e.Model, e.Err)
}

// Unwrap returns the model's error.
func (e *ModelError) Unwrap() error { return e.Err }

// ToolError ends an invocation whose tool failed and no on-tool-error
// callback turned the failure into a map (escalation). It also ends one
// whose call answered with a result, or recorded a state change, that does
// not encode as JSON (NaN, ±Inf, a channel, a func): a bug in the tool,
// not an outage of the session store, which could not store it; Err then
// names the member and wraps encoding/json's error.
type ToolError struct {
	Agent  string // Agent is the agent's name.
	Tool   string // Tool is the tool's name.
	CallID string // CallID is the function call id.
	Err    error  // Err is the tool's error.
}

// Error implements error.
func (e *ToolError) Error() string {
	return fmt.Sprintf("agent %s: tool %s (call %s): %v", e.Agent, e.Tool, e.CallID, e.Err)
}

// Unwrap returns the tool's error.
func (e *ToolError) Unwrap() error { return e.Err }

// ToolTimeoutError is the error of a tool call that ran past
// Agent.ToolTimeout and then failed. It matches context.DeadlineExceeded
// (errors.Is) and wraps the tool's own error.
type ToolTimeoutError struct {
	Tool  string        // Tool is the tool's name.
	After time.Duration // After is the Agent.ToolTimeout that passed.
	Err   error         // Err is the tool's error.
}

// Error implements error.
func (e *ToolTimeoutError) Error() string {
	return fmt.Sprintf("tool %s timed out after %s: %v", e.Tool, e.After, e.Err)
}

// Unwrap returns context.DeadlineExceeded and the tool's error.
func (e *ToolTimeoutError) Unwrap() []error { return []error{context.DeadlineExceeded, e.Err} }

// CallbackError ends an invocation whose callback returned an error or
// panicked.
type CallbackError struct {
	Hook string // Hook names the callback kind (e.g. "before-model").
	Err  error  // Err is the callback's error or recovered panic.
}

// Error implements error.
func (e *CallbackError) Error() string { return fmt.Sprintf("agent: %s callback: %v", e.Hook, e.Err) }

// Unwrap returns the callback's error.
func (e *CallbackError) Unwrap() error { return e.Err }

// SessionError ends an invocation whose session could not be read or
// written: the agent's own infrastructure failed, not the model.
type SessionError struct {
	Op  string // Op is the failed operation ("load" or "append").
	Err error  // Err is the store's error.
}

// Error implements error.
func (e *SessionError) Error() string { return fmt.Sprintf("agent: session %s: %v", e.Op, e.Err) }

// Unwrap returns the store's error.
func (e *SessionError) Unwrap() error { return e.Err }
