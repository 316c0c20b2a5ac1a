package producercli

import (
	"io"
	"os"

	"golang.org/x/term"
)

// isTerminal reports whether w is an *os.File on a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
