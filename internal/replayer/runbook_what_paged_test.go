package replayer

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// docs/runbook.md, "What paged": after an AUTH / NOT_FOUND / BAD_REQUEST
// page, "Fix the configuration first ..., then follow steps 1–5 below with
// `--class AUTH --force`". Steps 4 and 5 are `replay --dry-run --class
// SERVER` and `replay --class SERVER --canary 5 --yes`, both annotated as
// exiting 0; run as that sentence says, after the fix (a healthy worker is
// running), they must exit 0 too. (The sentence said `--class AUTH` alone:
// both commands stopped with exit 2, halted (refused-class), since AUTH
// needs --force, which only step 6 mentioned.)
func TestWhatPagedStepsWithClassAUTHForce(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	doc, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "docs", "runbook.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(strings.Fields(string(doc)), " "), "then follow steps 1–5 below with `--class AUTH --force`") {
		t.Fatal("the runbook's \"What paged\" no longer says how steps 1–5 run for AUTH: update this test with it")
	}
	var steps []runbookCommand // the replay commands of steps 1–5 (before "## 6.")
	for _, c := range parseRunbook(t) {
		if c.args[0] == "replay" && strings.Contains(strings.Join(c.args, " "), "--class SERVER") {
			steps = append(steps, c)
		}
	}
	if len(steps) < 2 {
		t.Fatalf("expected the dry run and canary commands of steps 4–5, found %d", len(steps))
	}

	x := newFx(t, true)
	x.seed("auth", 3, "AUTH", 0)
	x.startWorker("w-fixed", simModel(t, "")) // the key was fixed: replays complete

	for _, c := range steps {
		args := make([]string, 0, len(c.args)+1)
		for _, a := range c.args {
			args = append(args, strings.ReplaceAll(a, "SERVER", "AUTH"))
		}
		args = append(args, "--force")
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		out := x.run(ctx, nil, args...)
		cancel()
		t.Logf("runbook line %d with --class AUTH --force: dlq-replayer %s: exit %d\nstderr: %s", c.line, strings.Join(args, " "), out.code, strings.TrimSpace(out.stderr))
		if out.code != c.wantExit {
			t.Errorf("runbook line %d (step via \"What paged\"): dlq-replayer %s: exit %d, the runbook says %d",
				c.line, strings.Join(args, " "), out.code, c.wantExit)
		}
	}
}
