package replayer

import (
	"encoding/json"
	"strings"
	"testing"
)

// Regression (found in review, seventeenth session): purge --json is for scripts: every outcome, the empty one included, is
// JSON on stdout (list --json prints [] and replay --json its summary when
// nothing matched; purge --json prints {"purged": n, "already_gone": m}
// when something did).
func TestPurgeJSONWithNothingToPurgeIsJSON(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	x.seed("srv", 2, "SERVER", 0)

	out := x.run(ctx, nil, "purge", "--class", "BAD_INPUT", "--yes", "--json").must(t, ExitOK, "purge nothing")
	var got map[string]int
	if err := json.Unmarshal([]byte(out.stdout), &got); err != nil {
		t.Fatalf("purge --json with nothing selected printed no JSON (%v):\n%s", err, out.stdout)
	}
	if got["purged"] != 0 || got["already_gone"] != 0 {
		t.Fatalf("purge --json = %v, want purged 0", got)
	}
	if n := len(x.dlqIDs()); n != 2 {
		t.Fatalf("%d entries left, want 2", n)
	}
}

// TestPurgeNeedsAFilterOrAll: purge deletes for good, so "purge --yes" with
// no filter (a half-typed command) is a usage error that deletes nothing;
// --all says it on purpose, and does not mix with a filter. park --dry-run
// says "would be parked", not "parked".
func TestPurgeNeedsAFilterOrAll(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	x.seed("srv", 2, "SERVER", 0)

	out := x.run(ctx, nil, "purge", "--yes").must(t, ExitUsage, "purge without a filter")
	contains(t, out.stderr, "purge needs a filter", "--all")
	if n := len(x.dlqIDs()); n != 2 {
		t.Fatalf("purge --yes without a filter deleted entries: %d left, want 2", n)
	}
	// A dry run of everything changes nothing: no filter needed.
	prev := x.run(ctx, nil, "purge", "--dry-run").must(t, ExitOK, "purge --dry-run without a filter")
	contains(t, prev.stdout, "would delete 2 entries")
	x.run(ctx, nil, "purge", "--all", "--class", "SERVER", "--yes").must(t, ExitUsage, "--all with a filter")
	if n := len(x.dlqIDs()); n != 2 {
		t.Fatalf("purge --all --class deleted entries: %d left, want 2", n)
	}

	dry := x.run(ctx, nil, "park", "--class", "SERVER", "--dry-run").must(t, ExitOK, "park --dry-run")
	contains(t, dry.stdout, "would be parked", "nothing was changed")
	if strings.Contains(strings.ReplaceAll(dry.stdout, "would be parked", ""), "parked by hand") {
		t.Fatalf("park --dry-run says parked:\n%s", dry.stdout)
	}

	all := x.run(ctx, nil, "purge", "--all", "--yes").must(t, ExitOK, "purge --all")
	contains(t, all.stdout, "purged 2 entries")
	if n := len(x.dlqIDs()); n != 0 {
		t.Fatalf("after purge --all: %d left", n)
	}
}
