package replayer

import (
	"context"
	"io"
	"testing"
	"time"
)

// Regression (found in review, twentieth session): confirm left its read
// of stdin behind when ctx ended. A later prompt of the same process on the
// same stdin (Run is a library entry: tests, an embedding tool) then raced
// that reader for the answer: the "yes" typed at the second prompt was
// read by the first, abandoned prompt, and the second waited for ever. One
// line reader per stdin (readLine) now hands the pending line to the next
// prompt.
func TestAbandonedPromptDoesNotEatTheNextAnswer(t *testing.T) {
	stdin, typing := io.Pipe()
	defer typing.Close()
	env := Env{Stdout: io.Discard, Stderr: io.Discard, Stdin: stdin, Terminal: func(s any) bool { return s == stdin }}

	ctx1, interrupt := context.WithCancel(context.Background())
	interrupt() // ^C at the first prompt
	if err := confirm(ctx1, env, "replay", 5, 3, false); err == nil {
		t.Fatal("the interrupted prompt confirmed")
	}
	time.Sleep(50 * time.Millisecond) // the abandoned reader is waiting on stdin

	done := make(chan error, 1)
	go func() { done <- confirm(context.Background(), env, "replay", 5, 3, false) }()
	time.Sleep(50 * time.Millisecond)
	go func() { _, _ = typing.Write([]byte("yes\n")) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the second prompt: %v after \"yes\"", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the second prompt never got the \"yes\" typed at it: the abandoned first prompt's reader took it")
	}
}
