package replayer

import (
	"io"
	"os"
	"time"

	"golang.org/x/term"
)

// Env is what Run talks to: the standard streams, the environment and the
// clock.
type Env struct {
	// Stdout receives tables, JSON and summaries.
	Stdout io.Writer
	// Stderr receives diagnostics, progress and the drain mode's log.
	Stderr io.Writer
	// Stdin answers confirmation prompts (only read on a terminal).
	Stdin io.Reader
	// Lookup reads the environment (os.LookupEnv when nil).
	Lookup func(string) (string, bool)
	// Environ lists the environment (KEY=VALUE entries, as os.Environ
	// returns them) for the check of unknown AGENTFLEET_ variables
	// (config.CheckEnv: a likely typo of a known one is refused, any other
	// is a warning on Stderr). When nil it is os.Environ if Lookup is nil too,
	// else nothing is checked (a test's Lookup is not the process's
	// environment).
	Environ func() []string
	// Terminal reports whether a stream is a terminal (for the progress
	// bar and confirmation prompts); when nil, an *os.File on a terminal
	// counts.
	Terminal func(stream any) bool
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

func (e Env) withDefaults() Env {
	if e.Stdout == nil {
		e.Stdout = io.Discard
	}
	if e.Stderr == nil {
		e.Stderr = io.Discard
	}
	if e.Stdin == nil {
		e.Stdin = eofReader{}
	}
	if e.Lookup == nil {
		e.Lookup = os.LookupEnv
		if e.Environ == nil {
			e.Environ = os.Environ
		}
	}
	if e.Terminal == nil {
		e.Terminal = isTerminal
	}
	if e.Now == nil {
		e.Now = time.Now
	}
	return e
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// isTerminal reports whether s is an *os.File on a terminal.
func isTerminal(s any) bool {
	f, ok := s.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
