package replayer

import (
	"testing"
)

// A negative --max is a usage error for every command that takes it; it
// was read as "no limit", so purge --max -1 --yes deleted every entry the
// filter matched.
func TestNegativeMaxIsAUsageError(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	x.seed("neg", 3, "UNKNOWN", 0)
	for _, args := range [][]string{
		{"purge", "--class", "UNKNOWN", "--max", "-1", "--yes"},
		{"park", "--class", "UNKNOWN", "--max", "-1", "--yes"},
		{"list", "--max", "-1"},
		{"replay", "--class", "UNKNOWN", "--force", "--max", "-1", "--yes"},
	} {
		out := x.run(ctx, nil, args...)
		if out.code != ExitUsage {
			t.Errorf("%v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, out.code, ExitUsage, out.stdout, out.stderr)
		}
		if left := x.dlqIDs(); len(left) != 3 {
			t.Fatalf("%v changed the DLQ: %v left", args, left)
		}
	}
}
