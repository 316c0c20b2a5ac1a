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
// `--class AUTH` (or the class that paged) in place of their class, and
// add `--force` to the replays". Every command of steps 1–5 that selects a
// class, run as that sentence says after the fix (a healthy worker is
// running), must exit as the runbook annotates it. (The sentence once said
// `--class AUTH` alone: the dry run and the canary stopped with exit 2,
// halted (refused-class), since AUTH needs --force. Regression (found in
// review, twenty-first session): it then said `--class AUTH --force` for
// every step, and step 1's `list --class AUTH --max 20 --force` stopped
// with exit 3: list has no --force.)
func TestWhatPagedStepsWithClassAUTHForce(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	doc, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "docs", "runbook.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(strings.Fields(string(doc)), " "),
		"then follow steps 1–5 below with `--class AUTH` (or the class that paged) in place of their class, and add `--force` to the replays") {
		t.Fatal("the runbook's \"What paged\" no longer says how steps 1–5 run for AUTH: update this test with it")
	}
	step6 := 0
	for i, l := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(l, "## 6.") {
			step6 = i + 1
			break
		}
	}
	var steps []runbookCommand // steps 1–5's commands that select a class
	replays := 0
	for _, c := range parseRunbook(t) {
		if c.line < step6 && strings.Contains(strings.Join(c.args, " "), "--class ") {
			steps = append(steps, c)
			if c.args[0] == "replay" {
				replays++
			}
		}
	}
	if replays < 2 || len(steps) == replays {
		t.Fatalf("expected the dry run and canary of steps 4–5 and other class-selecting steps, found %d commands, %d replays", len(steps), replays)
	}

	x := newFx(t, true)
	x.seed("auth", 3, "AUTH", 0)
	x.startWorker("w-fixed", simModel(t, "")) // the key was fixed: replays complete

	for _, c := range steps {
		args := make([]string, 0, len(c.args)+1)
		for i := 0; i < len(c.args); i++ {
			args = append(args, c.args[i])
			if c.args[i] == "--class" && i+1 < len(c.args) {
				args = append(args, "AUTH")
				i++
			}
		}
		if c.args[0] == "replay" {
			args = append(args, "--force")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		out := x.run(ctx, nil, args...)
		cancel()
		t.Logf("runbook line %d as \"What paged\" says: dlq-replayer %s: exit %d\nstderr: %s", c.line, strings.Join(args, " "), out.code, strings.TrimSpace(out.stderr))
		if out.code != c.wantExit {
			t.Errorf("runbook line %d (step via \"What paged\"): dlq-replayer %s: exit %d, the runbook says %d",
				c.line, strings.Join(args, " "), out.code, c.wantExit)
		}
	}
}
