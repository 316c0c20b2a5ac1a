package tool

import (
	"errors"
	"fmt"
	"regexp"
)

// MaxNameLen is the longest tool name every supported provider accepts.
const MaxNameLen = 64

// ErrInvalidName is matched by errors.Is for the error CheckName returns.
var ErrInvalidName = errors.New("tool: invalid name")

// nameRE is what both providers accept as a function name: OpenAI
// ^[a-zA-Z0-9_-]{1,64}$; Gemini a letter or an underscore first, then
// letters, digits, '_', '.', ':' and '-', at most 64. Their intersection:
// no '.' or ':' (OpenAI), no digit or '-' first (Gemini).
var nameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]{0,63}$`)

// CheckName reports (as an error matching ErrInvalidName) a tool name a
// provider would refuse: empty, longer than MaxNameLen, not starting with a
// letter or an underscore, or holding anything but ASCII letters, digits,
// '_' and '-'. Every declaration goes into every model request, so one such
// name would fail every call of the agent with a 400; NewFunc and
// agent.Agent.Validate refuse it at start instead.
func CheckName(name string) error {
	if nameRE.MatchString(name) {
		return nil
	}
	if name == "" {
		return fmt.Errorf("%w: empty", ErrInvalidName)
	}
	return fmt.Errorf("%w %q: want 1 to %d ASCII letters, digits, '_' or '-', starting with a letter or '_'", ErrInvalidName, name, MaxNameLen)
}
