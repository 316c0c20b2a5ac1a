package replayer

import (
	"errors"
	"fmt"

	"github.com/agentfleet/agentfleet/internal/app"
)

// HaltError says a safety rule stopped a replay (exit code 2).
type HaltError struct {
	// Rule names the rule: "canary", "auto-halt", "refused-class",
	// "confirmation", "retention".
	Rule string
	// Reason says why, for on-call.
	Reason string
}

// Error implements error.
func (e *HaltError) Error() string { return "halted (" + e.Rule + "): " + e.Reason }

// Rules of HaltError.
const (
	RuleCanary       = "canary"
	RuleAutoHalt     = "auto-halt"
	RuleRefusedClass = "refused-class"
	RuleConfirmation = "confirmation"
)

// UsageError is a bad command line (exit code 3).
type UsageError struct {
	// Msg says what is wrong.
	Msg string
}

// Error implements error.
func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// ErrNotFound is returned by show for an invocation with no DLQ or parked
// entry, no invocation record and no session events.
var ErrNotFound = errors.New("replayer: invocation not found")

// exitCode maps an error of a command to its exit code.
func exitCode(interrupted bool, err error) int {
	var he *HaltError
	var ue *UsageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &he):
		return ExitHalted
	case errors.As(err, &ue), errors.Is(err, ErrOtherStores), errors.Is(err, app.ErrBadConfig):
		return ExitUsage
	case interrupted:
		return ExitInterrupted
	}
	return ExitError
}
