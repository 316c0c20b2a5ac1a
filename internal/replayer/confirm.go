package replayer

import (
	"bufio"
	"context"
	"fmt"
	"strings"
)

// confirm asks for a confirmation when n entries exceed the threshold and
// yes is not set: on a terminal it prompts, otherwise it refuses. The
// returned error is a *HaltError (rule confirmation), or ctx's error when
// ctx ends while the prompt waits (^C at the prompt: exit 130, nothing
// changed; the read of the terminal is left behind, to end with the
// process).
func confirm(ctx context.Context, env Env, what string, n, threshold int, yes bool) error {
	if yes || n <= threshold {
		return nil
	}
	if !env.Terminal(env.Stdin) {
		return &HaltError{Rule: RuleConfirmation, Reason: fmt.Sprintf(
			"refusing to %s %d entries without confirmation (more than replay.confirm_above = %d) and stdin is not a terminal: "+
				"run it again with --yes, or narrow it with --max, --class or --agent (try --dry-run first)", what, n, threshold)}
	}
	fmt.Fprintf(env.Stderr, "%s %d entries? Type yes to continue: ", what, n)
	answer := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(env.Stdin).ReadString('\n')
		answer <- line
	}()
	var line string
	select {
	case line = <-answer:
	case <-ctx.Done():
		fmt.Fprintln(env.Stderr)
		return fmt.Errorf("not confirmed, nothing was changed: %w", ctx.Err())
	}
	if a := strings.ToLower(strings.TrimSpace(line)); a == "yes" || a == "y" {
		return nil
	}
	return &HaltError{Rule: RuleConfirmation, Reason: "not confirmed; nothing was changed"}
}
