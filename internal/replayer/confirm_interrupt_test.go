package replayer

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// Regression (left open in the nineteenth session, fixed in the
// twentieth): ^C at the confirmation prompt ("replay 5 entries? Type yes to
// continue:") did not end the command: the signal cancelled the context,
// but the prompt went on reading the terminal, and on-call had to press
// ^C a second time (which kills the process) or answer. The prompt now
// ends with the context: exit 130, nothing changed.
func TestInterruptAtTheConfirmationPromptEndsTheCommand(t *testing.T) {
	x := newFx(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	x.seed("ci", 5, "SERVER", 0)
	stdin, typing := io.Pipe() // on-call types nothing
	defer typing.Close()
	for _, args := range [][]string{{"replay"}, {"park", "--class", "SERVER"}, {"purge", "--class", "SERVER"}} {
		var o, e syncBuf
		env := Env{Stdout: &o, Stderr: &e, Stdin: stdin, Lookup: x.lookup(map[string]string{"AGENTFLEET_REPLAY_CONFIRM_ABOVE": "3"}),
			Terminal: func(s any) bool { return s == stdin }}
		runCtx, interrupt := context.WithCancel(ctx)
		done := make(chan int, 1)
		go func() { done <- Run(runCtx, args, env) }()
		eventually(t, "the prompt is shown", 30*time.Second, func() bool { return strings.Contains(e.String(), "Type yes to continue") })
		interrupt() // ^C
		select {
		case code := <-done:
			if code != ExitInterrupted {
				t.Fatalf("%v: exit %d after ^C at the prompt, want %d\n%s", args, code, ExitInterrupted, e.String())
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%v: still waiting at the prompt 10s after ^C", args)
		}
	}
	if n := len(x.requestMsgIDs()); n != 0 {
		t.Fatalf("published %d requests after ^C at the prompt, want 0", n)
	}
	if n := len(x.dlqIDs()); n != 5 {
		t.Fatalf("the DLQ holds %d entries after ^C at the prompt, want 5", n)
	}
}
