package tool

import (
	"errors"
	"fmt"
)

// ErrUnknownTool is the error on-tool-error callbacks see when the model
// calls a function that is not registered.
var ErrUnknownTool = errors.New("tool: unknown tool")

// ErrOutcomeUnknown is matched by errors.Is for the error of a tool call
// that failed after it may have acted, as an idempotency wrapper records it
// (reason ReasonOutcomeUnknown): a retry answers from that record. The
// error's text is the tool's own, and it escalates as it would unmarked
// (an auth error is still an auth error); a timeout so marked answers the
// model with KeyMayHaveActed set.
var ErrOutcomeUnknown = errors.New("tool: outcome unknown")

// OutcomeUnknown marks err (non-nil) as ErrOutcomeUnknown, keeping its text
// and its chain.
func OutcomeUnknown(err error) error { return &outcomeUnknownError{err: err} }

type outcomeUnknownError struct{ err error }

func (e *outcomeUnknownError) Error() string   { return e.err.Error() }
func (e *outcomeUnknownError) Unwrap() []error { return []error{e.err, ErrOutcomeUnknown} }

// ErrInvalidArguments is matched by errors.Is for every *ArgumentError.
var ErrInvalidArguments = errors.New("tool: invalid arguments")

// ArgumentError reports arguments that do not fit the tool's declaration, or
// that a tool rejects itself. Its Detail is short and safe to show the model.
type ArgumentError struct {
	Tool   string // Tool is the tool's name.
	Detail string // Detail says what is wrong with the arguments.
}

// Error implements error.
func (e *ArgumentError) Error() string {
	return fmt.Sprintf("tool %s: invalid arguments: %s", e.Tool, e.Detail)
}

// Is makes errors.Is(err, ErrInvalidArguments) true.
func (e *ArgumentError) Is(target error) bool { return target == ErrInvalidArguments }

// PanicError is what a panicking tool (or callback) becomes. The stack is
// kept for logs; it never reaches the model.
type PanicError struct {
	Tool  string // Tool is the tool's (or callback's) name.
	Value any    // Value is the recovered panic value.
	Stack []byte // Stack is the goroutine stack at the panic, for logs.
}

// Error implements error. It does not include the stack.
func (e *PanicError) Error() string {
	return fmt.Sprintf("tool %s panicked: %v", e.Tool, e.Value)
}

// IsInfrastructure reports whether err (or an error in its chain) says the
// agent's own infrastructure failed, e.g. an idempotency store that is down
// and fails closed. Such errors are never turned into error maps for the
// model: the invocation ends and the worker puts the message back to retry
// later. An error type opts in with a method `Infrastructure() bool`.
func IsInfrastructure(err error) bool {
	var ie interface{ Infrastructure() bool }
	return errors.As(err, &ie) && ie.Infrastructure()
}
