package replayer

import (
	"strings"
	"testing"
)

// Regression (found in review, twenty-third session): the runbook (step 5)
// says "purge always asks", whatever replay.confirm_above is. A tired
// on-call engineer who forgets --yes on `purge --class BAD_INPUT` in a
// script was told "more than replay.confirm_above = 0", a threshold that is
// configured to 100 (configs/dlq-replayer.yaml) and that purge does not
// use at all: the message sends them to a setting that does not exist.
func TestPurgeRefusalDoesNotMisstateConfirmAbove(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	x.seed("junk", 1, "BAD_INPUT", 0)

	out := x.run(ctx, nil, "purge", "--class", "BAD_INPUT").must(t, ExitHalted, "purge without --yes, stdin not a terminal")
	if n := len(x.dlqIDs()); n != 1 {
		t.Fatalf("purge without --yes deleted entries: %d left, want 1", n)
	}
	if x.cfg.Replay.ConfirmAbove == 0 {
		t.Fatal("test assumes the default replay.confirm_above is not 0")
	}
	if strings.Contains(out.stderr, "replay.confirm_above = 0") {
		t.Fatalf("purge's refusal misstates replay.confirm_above (configured %d; purge always asks):\n%s",
			x.cfg.Replay.ConfirmAbove, out.stderr)
	}
	if strings.Contains(out.stderr, "--max") {
		t.Fatalf("purge's refusal suggests narrowing with --max, which cannot help (purge always asks):\n%s", out.stderr)
	}
}
