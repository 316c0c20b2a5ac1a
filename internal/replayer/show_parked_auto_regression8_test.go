package replayer

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Regression (found in review, twenty-fifth session): on-call parks an
// entry for a longer look ("nothing replays them automatically", runbook
// step 7), then runs `show <invocation_id>` on it. show printed the parked
// entry as
//
//	PARKED entry seq 1, stored 0s ago
//	  class SERVER (auto-replayable), agent support, ...
//
// "auto-replayable" is what show says of a DLQ entry that replay and drain
// take by themselves; a parked entry is never taken by drain or a plain
// replay: only a person's `replay --parked` brings it back. At 3 a.m. the
// line read as "drain will deal with it", and the entry waited until the
// parked stream's max age dropped it. (Show.Write labelled every entry with
// le.Replayable, which for parked entries is computed with parkedSel, i.e.
// "replay --parked would take it".)
//
// Now a parked entry is labelled "parked: bring it back with replay
// --parked", never "auto-replayable"; and its own failure, which Park
// records in the copy's History, is not printed again as an "earlier
// failure".
func TestShowDoesNotCallAParkedEntryAutoReplayable(t *testing.T) {
	x := newFx(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	x.seed("spa", 1, "SERVER", 0)
	x.run(ctx, nil, "park", "--invocation", "spa-0", "--yes").must(t, ExitOK, "park")
	if n := x.streamState(x.cfg.Replay.ParkedStream).Msgs; n != 1 {
		t.Fatalf("parked %d entries, want 1", n)
	}
	out := x.run(ctx, nil, "show", "spa-0").must(t, ExitOK, "show")
	_, parked, found := strings.Cut(out.stdout, "PARKED entry")
	if !found {
		t.Fatalf("show does not list the parked entry:\n%s", out.stdout)
	}
	line, _, _ := strings.Cut(strings.SplitN(parked, "\n", 3)[1], "\n")
	if strings.Contains(line, "auto-replayable") {
		t.Errorf("show calls a parked entry, which nothing replays automatically, %q:\n%s", strings.TrimSpace(line), out.stdout)
	}
	if !strings.Contains(line, "replay --parked") {
		t.Errorf("show does not say how to bring the parked entry back (replay --parked): %q", strings.TrimSpace(line))
	}
	if strings.Contains(parked, "earlier failure") {
		t.Errorf("show prints the parked entry's own (and only) failure again as an earlier failure:\n%s", out.stdout)
	}
}
