package replayer

import (
	"context"
	"slices"
	"testing"
)

// Regression (left open in the twenty-third session, fixed in the twenty-fourth): a repeated
// --class kept the last one silently: `replay --class SERVER --class
// TIMEOUT --yes` replayed the TIMEOUT entries alone and left the SERVER
// ones, and `stats` counted one class where on-call asked for two. A
// filter takes one value (the DLQ's subject filter, --force naming the one
// class reviewed), so every command that takes --class (and the other
// filters) refuses a repeat as a usage error naming both values, before it
// changes anything.
func TestRepeatedClassIsAUsageError(t *testing.T) {
	x := newFx(t, true)
	ctx := ctxT(t)
	x.seed("srv", 2, "SERVER", 0)
	x.seed("tmo", 2, "TIMEOUT", 0)
	before := x.dlqIDs()
	twice := []string{"--class", "SERVER", "--class", "TIMEOUT"}
	for _, args := range [][]string{
		append([]string{"stats"}, twice...),
		append([]string{"list"}, twice...),
		append([]string{"replay", "--yes", "--rate", "0"}, twice...),
		append([]string{"replay", "--dry-run"}, twice...),
		append([]string{"park", "--yes"}, twice...),
		append([]string{"purge", "--yes"}, twice...),
		append([]string{"drain", "--metrics-addr", ""}, twice...),
		{"list", "--agent", "support", "--agent", "billing"},
		{"replay", "--yes", "--since", "2h", "--since", "1h"},
	} {
		runCtx := ctx
		if args[0] == "drain" {
			// A drain that took the flags would run until its context ends:
			// one that is over makes it return at once, with another code.
			c, cancel := context.WithCancel(ctx)
			cancel()
			runCtx = c
		}
		out := x.run(runCtx, nil, args...)
		t.Logf("%v: exit %d\n%s", args, out.code, out.stderr)
		if out.code != ExitUsage {
			t.Errorf("%v: exit %d, want %d (usage)\nstdout:\n%s\nstderr:\n%s", args, out.code, ExitUsage, out.stdout, out.stderr)
			continue
		}
		switch {
		case slices.Contains(args, "--class"):
			contains(t, out.stderr, `--class given twice ("SERVER", then "TIMEOUT")`, "run the command once for each")
		case slices.Contains(args, "--agent"):
			contains(t, out.stderr, `--agent given twice ("support", then "billing")`)
		default:
			contains(t, out.stderr, `--since given twice ("2h", then "1h")`)
		}
		if after := x.dlqIDs(); !slices.Equal(after, before) {
			t.Fatalf("%v changed the DLQ: %v, was %v", args, after, before)
		}
	}
	if n := len(x.requestMsgIDs()); n != 0 {
		t.Fatalf("%d replays published by commands that were refused", n)
	}
	// One class is taken as before.
	out := x.run(ctx, nil, "list", "--class", "TIMEOUT").must(t, ExitOK, "list --class TIMEOUT")
	contains(t, out.stdout, "tmo-0", "tmo-1")
}
