package replayer

import (
	"encoding/json"
	"strings"
	"testing"
)

// Regression (found in review, twenty-second session): a class a newer
// worker writes (the entry format keeps class a plain string "so old
// replayers read new classes", README) shows up in stats, but every command
// refused --class for it as an unknown class (exit 3): the on-call who read
// "FUTURE_CLASS support 2 no (needs a person)" in stats could not list,
// purge, park or (forced) replay those entries by class. A well-formed
// class ([A-Z][A-Z0-9_]*) the taxonomy does not know is now accepted while
// the DLQ or the parked stream holds entries of it; otherwise it is still a
// usage error with a "did you mean".
func TestClassInTheDLQButUnknownToTaxonomyIsFilterable(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	x.seed("future", 2, "FUTURE_CLASS", 0)

	st := x.run(ctx, nil, "stats", "--json").must(t, ExitOK, "stats")
	if !strings.Contains(st.stdout, "FUTURE_CLASS") {
		t.Fatalf("stats does not show the class:\n%s", st.stdout)
	}
	out := x.run(ctx, nil, "list", "--class", "FUTURE_CLASS", "--json")
	if out.code != ExitOK {
		t.Fatalf("list --class FUTURE_CLASS (a class stats shows, 2 entries in the DLQ): exit %d, want 0\nstderr: %s", out.code, out.stderr)
	}
	var entries []ListedEntry
	if err := json.Unmarshal([]byte(out.stdout), &entries); err != nil || len(entries) != 2 {
		t.Fatalf("list --class FUTURE_CLASS: %d entries (%v), want 2:\n%s", len(entries), err, out.stdout)
	}
	x.run(ctx, nil, "purge", "--class", "FUTURE_CLASS", "--dry-run").must(t, ExitOK, "purge --class FUTURE_CLASS --dry-run")
	// The typo guard stays: a class neither the taxonomy nor any entry has.
	typo := x.run(ctx, nil, "list", "--class", "SERVR").must(t, ExitUsage, "list --class SERVR")
	contains(t, typo.stderr, "unknown failure class", "did you mean SERVER?")
}
