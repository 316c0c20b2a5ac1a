package replayer

import (
	"strings"
	"testing"
)

// Regression (found in review, nineteenth session): a mistyped --class
// (QUOTA for QUOTA_EXHAUSTED, SERVR) was not named as unknown. `replay
// --class QUOTA` was refused as a class that "is not auto-replayable (never
// retry; keep the raw message; …): review first, then replay with --class
// QUOTA --force" (exit 2, the UNKNOWN policy of a class the taxonomy does
// not have), and doing what the message said, `replay --class QUOTA
// --force --yes`, replayed nothing and exited 0, while the QUOTA_EXHAUSTED
// entries stayed in the DLQ. At 3 a.m. that reads as "done". Now a --class
// the taxonomy does not know (taxonomy.ParseClass) is a usage error (exit
// 3) that names it unknown and lists the classes, on every command that
// takes --class.
func TestMistypedClassIsRefusedAsReviewableAndForcedToNothing(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	x.seed("quota", 3, "QUOTA_EXHAUSTED", 0)

	refused := x.run(ctx, nil, "replay", "--class", "QUOTA", "--dry-run")
	forced := x.run(ctx, nil, "replay", "--class", "QUOTA", "--force", "--yes")
	if refused.code != ExitUsage || forced.code != ExitUsage || !strings.Contains(strings.ToLower(refused.stderr), "unknown") {
		t.Fatalf("--class QUOTA (no such class; the DLQ holds QUOTA_EXHAUSTED): "+
			"replay --dry-run exit %d (want %d, unknown class), stderr: %s"+
			"replay --force --yes exit %d (want %d), stdout:\n%s\nstderr:\n%s\nDLQ still holds %v",
			refused.code, ExitUsage, refused.stderr, forced.code, ExitUsage, forced.stdout, forced.stderr, x.dlqIDs())
	}
	contains(t, refused.stderr, "QUOTA_EXHAUSTED") // the valid classes are named
	// Every command that takes --class.
	for _, args := range [][]string{
		{"stats"}, {"list"}, {"park", "--yes"}, {"purge", "--yes"}, {"drain", "--metrics-addr", ""},
	} {
		out := x.run(ctx, nil, append(args, "--class", "QUOTA")...).must(t, ExitUsage, args[0]+" --class QUOTA")
		contains(t, out.stderr, "unknown failure class", "QUOTA_EXHAUSTED")
	}
	// A known class in lower case is still accepted.
	x.run(ctx, nil, "list", "--class", "quota_exhausted").must(t, ExitOK, "list --class quota_exhausted")
	if n := len(x.dlqIDs()); n != 3 {
		t.Fatalf("the DLQ holds %d entries, want the 3 seeded", n)
	}
}
