package producercli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// printResult writes a result: its content when completed, else its status,
// class and user message; the whole envelope as indented JSON with asJSON.
// It returns the exit code the result stands for.
func printResult(w io.Writer, res *envelope.Result, asJSON bool) int {
	if asJSON {
		b, _ := json.MarshalIndent(res, "", "  ")
		fmt.Fprintln(w, string(b))
	} else if res.Status == envelope.StatusCompleted {
		fmt.Fprintln(w, res.Content)
		if res.Truncated {
			fmt.Fprintln(w, "[truncated]")
		}
	} else {
		fmt.Fprintf(w, "%s %s: %s\n", res.Status, orDash(res.ErrorClass), res.UserMessage)
	}
	if res.Status != envelope.StatusCompleted {
		return ExitNotCompleted
	}
	return ExitOK
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
