package replayer

import (
	"slices"
	"testing"
	"time"
)

// Regression (left open in the twenty-third session, fixed in the twenty-fourth): a reversed
// --since/--until selected nothing silently: `list --since 1h --until 2h`
// (a duration counts back from now, so 1h ago is after 2h ago) printed an
// empty table, `stats` zero rows and `replay` "nothing to replay", exit 0,
// and on-call read "the DLQ holds nothing of that hour". Every command that
// takes the two refuses a --since not before --until as a usage error
// naming both values, before it changes anything.
func TestReversedSinceUntilIsAUsageError(t *testing.T) {
	x := newFx(t, true)
	ctx := ctxT(t)
	x.seed("rev", 3, "SERVER", 0)
	before := x.dlqIDs()
	at := time.Now().UTC().Add(-time.Hour).Format(time.RFC3339)
	for _, args := range [][]string{
		{"stats", "--since", "1h", "--until", "2h"},
		{"list", "--since", "1h", "--until", "2h"},
		{"replay", "--dry-run", "--since", "1h", "--until", "2h"},
		{"replay", "--yes", "--since", "1h", "--until", "2h"},
		{"park", "--yes", "--since", "1h", "--until", "2h"},
		{"purge", "--yes", "--since", "1h", "--until", "2h"},
		{"list", "--since", at, "--until", at}, // an empty interval too
	} {
		out := x.run(ctx, nil, args...)
		t.Logf("%v: exit %d\n%s", args, out.code, out.stderr)
		if out.code != ExitUsage {
			t.Errorf("%v: exit %d, want %d (usage)\nstdout:\n%s\nstderr:\n%s", args, out.code, ExitUsage, out.stdout, out.stderr)
			continue
		}
		since, until := args[slices.Index(args, "--since")+1], args[slices.Index(args, "--until")+1]
		contains(t, out.stderr, "--since "+since+" (", "is not before --until "+until+" (")
		if after := x.dlqIDs(); !slices.Equal(after, before) {
			t.Fatalf("%v changed the DLQ: %v, was %v", args, after, before)
		}
	}
	// In order, the interval selects the entries stored in it.
	later := time.Now().UTC().Add(time.Hour).Format(time.RFC3339)
	out := x.run(ctx, nil, "list", "--since", "2h", "--until", later).must(t, ExitOK, "list --since 2h --until "+later)
	contains(t, out.stdout, "rev-0", "rev-2")
}
