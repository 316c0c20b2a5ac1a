package replayer

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
)

// confirm asks for a confirmation when n entries exceed the threshold and
// yes is not set: on a terminal it prompts, otherwise it refuses. A
// negative threshold (purge) always asks, and its refusal names no
// setting and no narrowing, which could not help (found in review,
// twenty-third session: it read "more than replay.confirm_above = 0"). The
// returned error is a *HaltError (rule confirmation), or ctx's error when
// ctx ends while the prompt waits (^C at the prompt: exit 130, nothing
// changed). The line is read through stdinLines, so a read left pending
// by an abandoned prompt answers the next prompt on the same stdin instead
// of eating its answer.
func confirm(ctx context.Context, env Env, what string, n, threshold int, yes bool) error {
	if !confirmAsks(n, threshold, yes) {
		return nil
	}
	if !env.Terminal(env.Stdin) {
		if threshold < 0 {
			return &HaltError{Rule: RuleConfirmation, Reason: fmt.Sprintf(
				"refusing to %s %d entries without confirmation (it always asks) and stdin is not a terminal: "+
					"run it again with --yes (try --dry-run first)", what, n)}
		}
		return &HaltError{Rule: RuleConfirmation, Reason: fmt.Sprintf(
			"refusing to %s %d entries without confirmation (more than replay.confirm_above = %d) and stdin is not a terminal: "+
				"run it again with --yes, or narrow it with --max, --class or --agent (try --dry-run first)", what, n, threshold)}
	}
	fmt.Fprintf(env.Stderr, "%s %d entries? Type yes to continue: ", what, n)
	line, err := readLine(ctx, env.Stdin)
	if err != nil && ctx.Err() != nil {
		fmt.Fprintln(env.Stderr)
		return fmt.Errorf("not confirmed, nothing was changed: %w", ctx.Err())
	}
	if a := strings.ToLower(strings.TrimSpace(line)); a == "yes" || a == "y" {
		return nil
	}
	return &HaltError{Rule: RuleConfirmation, Reason: "not confirmed; nothing was changed"}
}

// confirmAsks reports whether confirm, given the same n, threshold and
// yes, asks for a confirmation (prompts, or refuses): a run it let through
// then read its plan before a wait of unknown length, and must treat the
// plan as possibly stale (ExecOptions.StalePlan).
func confirmAsks(n, threshold int, yes bool) bool { return !yes && n > threshold }

// stdinLines holds one lineReader per stdin a prompt reads, so that a
// process (Run is a library entry: tests, an embedding tool) has at most
// one read of a stream pending, whatever prompts gave up waiting (found
// in review, twentieth session: the reader an interrupted prompt left
// behind took the answer typed at the next one).
var stdinLines = struct {
	sync.Mutex
	m map[io.Reader]*lineReader
}{m: map[io.Reader]*lineReader{}}

// lineReader reads the lines of one stream on demand: a prompt that needs
// a line starts a read unless one is pending (then it waits for that
// one's line) or a line read for an abandoned prompt is waiting for it.
// The read runs in a goroutine that ends with the line, so none runs while
// no prompt waits or was abandoned waiting. Its fields are guarded by
// stdinLines' mutex.
type lineReader struct {
	br      *bufio.Reader
	reading bool          // a read is pending; its result goes to lines
	lines   chan lineRead // capacity 1: the result of the last read, not taken yet
}

type lineRead struct {
	line string
	err  error
}

// readLine returns the next line of r (a line's worth of text ending at
// EOF counts), or ctx's error when ctx ends first; the read then stays
// pending, and its line goes to the next readLine of r.
func readLine(ctx context.Context, r io.Reader) (string, error) {
	stdinLines.Lock()
	// A reader whose type is not comparable is no map key: it gets a
	// lineReader of its own, as every prompt did before.
	shared := reflect.TypeOf(r).Comparable()
	var lr *lineReader
	if shared {
		lr = stdinLines.m[r]
	}
	if lr == nil {
		lr = &lineReader{br: bufio.NewReader(r), lines: make(chan lineRead, 1)}
		if shared {
			stdinLines.m[r] = lr
		}
	}
	if !lr.reading && len(lr.lines) == 0 {
		lr.reading = true
		go lr.read()
	}
	stdinLines.Unlock()
	select {
	case res := <-lr.lines:
		if shared {
			stdinLines.Lock()
			lr.forget(r)
			stdinLines.Unlock()
		}
		return res.line, res.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// read reads one line of lr's stream into lr.lines.
func (lr *lineReader) read() {
	line, err := lr.br.ReadString('\n')
	stdinLines.Lock()
	defer stdinLines.Unlock()
	lr.reading = false
	lr.lines <- lineRead{line, err}
}

// forget drops lr from stdinLines once nothing of r is held (no read
// pending, no line waiting, nothing buffered past the last line), so the
// registry does not keep every stream ever prompted on. The caller holds
// stdinLines' mutex.
func (lr *lineReader) forget(r io.Reader) {
	if !lr.reading && len(lr.lines) == 0 && lr.br.Buffered() == 0 && stdinLines.m[r] == lr {
		delete(stdinLines.m, r)
	}
}
