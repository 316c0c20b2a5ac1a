package replayer

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// runbookCommand is one "$ dlq-replayer ..." line of a console block.
type runbookCommand struct {
	line     int
	args     []string
	wantExit int
	longRun  bool
}

// parseRunbook reads the command lines of docs/runbook.md's console
// blocks. A trailing "# exit N" says the expected exit code; "# long-running"
// marks drain.
func parseRunbook(t *testing.T) []runbookCommand {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	f, err := os.Open(filepath.Join(filepath.Dir(file), "..", "..", "docs", "runbook.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []runbookCommand
	in := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(l, "```console"):
			in = true
			continue
		case strings.HasPrefix(l, "```"):
			in = false
			continue
		}
		if !in {
			continue
		}
		if !strings.HasPrefix(l, "$ dlq-replayer ") {
			t.Fatalf("runbook line %d: a console block holds something other than a dlq-replayer command: %q", n, l)
		}
		cmd, comment, _ := strings.Cut(strings.TrimPrefix(l, "$ dlq-replayer "), "#")
		rc := runbookCommand{line: n, args: strings.Fields(cmd)}
		comment = strings.TrimSpace(comment)
		switch {
		case strings.HasPrefix(comment, "exit "):
			rc.wantExit, err = strconv.Atoi(strings.TrimPrefix(comment, "exit "))
			if err != nil {
				t.Fatalf("runbook line %d: %q", n, comment)
			}
		case comment == "long-running":
			rc.longRun = true
		case comment != "":
			t.Fatalf("runbook line %d: unknown annotation %q", n, comment)
		}
		out = append(out, rc)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRunbook runs every command docs/runbook.md shows, in order, against a
// fleet after a simulated outage, so the runbook never rots.
func TestRunbook(t *testing.T) {
	cmds := parseRunbook(t)
	if len(cmds) < 10 {
		t.Fatalf("only %d commands found in the runbook", len(cmds))
	}
	seen := map[string]bool{}
	for _, c := range cmds {
		seen[c.args[0]] = true
	}
	for _, want := range []string{"stats", "list", "show", "replay", "park", "purge", "drain"} {
		if !seen[want] {
			t.Fatalf("the runbook never shows %q", want)
		}
	}

	x := newFx(t, true)
	res := x.watchResults()
	var ids []string
	for i := range 8 {
		id := fmt.Sprintf("rb-%d", i)
		ids = append(ids, id)
		x.submit(request(id, fmt.Sprintf("A-%d", 1001+i)))
	}
	w := x.startWorker("w-outage", &outage{healthy: simModel(t, ""), down: simModel(t, "server=1.0")})
	eventually(t, "the outage dead-letters everything", 30*time.Second, func() bool { return res.count(ids, envelope.StatusDeadLettered) == len(ids) })
	w.stop()
	x.seed("loop", 1, "CALL_BUDGET", 0)
	x.seed("odd", 1, "UNKNOWN", 0)
	x.seed("junk", 1, "BAD_INPUT", 0)
	x.startWorker("w-fixed", simModel(t, ""))

	for _, c := range cmds {
		args := make([]string, len(c.args))
		for i, a := range c.args {
			args[i] = strings.ReplaceAll(a, "<invocation_id>", "rb-1")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		if c.longRun {
			ctx, cancel = context.WithTimeout(context.Background(), 1500*time.Millisecond)
			args = append(args, "--metrics-addr", "127.0.0.1:0")
		}
		out := x.run(ctx, nil, args...)
		cancel()
		if out.code != c.wantExit {
			t.Fatalf("runbook line %d: dlq-replayer %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s",
				c.line, strings.Join(args, " "), out.code, c.wantExit, out.stdout, out.stderr)
		}
		t.Logf("line %d: dlq-replayer %s: exit %d", c.line, strings.Join(args, " "), out.code)
		if args[0] == "show" {
			contains(t, out.stdout, "ALREADY DONE", "refund_order")
		}
	}
	eventually(t, "every outage request completed", 30*time.Second, func() bool { return res.count(ids, envelope.StatusCompleted) == len(ids) })
	for id, n := range x.refundsByInvocation() {
		if strings.HasPrefix(id, "rb-") && n != 1 {
			t.Fatalf("%s refunded %d times", id, n)
		}
	}
	if left := x.dlqIDs(); len(left) != 0 {
		t.Fatalf("left in the DLQ after the runbook: %v", left)
	}
}
