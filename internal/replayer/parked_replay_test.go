package replayer

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// replay --parked brings back what a person reviewed: entries parked at
// the replay limit are replayed once more (not parked again), complete,
// and leave the parked stream; a class that needs a person still needs
// --class and --force there too.
func TestReplayParked(t *testing.T) {
	x := newFx(t, true)
	ctx := ctxT(t)
	res := x.watchResults()
	ids := x.seed("tired", 2, "SERVER", 3) // at replay.max_replays (3)
	x.seed("odd", 1, "UNKNOWN", 0)
	x.run(ctx, nil, "replay", "--yes").must(t, ExitOK, "replay parks at the limit")
	x.run(ctx, nil, "park", "--class", "UNKNOWN", "--yes").must(t, ExitOK, "park UNKNOWN")
	if st := x.streamState(x.cfg.Replay.ParkedStream); st.Msgs != 3 {
		t.Fatalf("parked stream holds %d, want 3", st.Msgs)
	}
	dry := x.run(ctx, nil, "replay", "--parked", "--dry-run").must(t, ExitOK, "dry run")
	contains(t, dry.stdout, "would replay 2", "skip 1")
	if st := x.streamState(x.cfg.Replay.ParkedStream); st.Msgs != 3 {
		t.Fatalf("the dry run changed the parked stream: %d left", st.Msgs)
	}

	out := x.run(ctx, nil, "replay", "--parked", "--yes").must(t, ExitOK, "replay --parked")
	if s := parseSummaryTotal(t, out.stdout); s["REPLAYED"] != 2 || s["PARKED"] != 0 {
		t.Fatalf("summary %v, want 2 replayed, none parked again\n%s", s, out.stdout)
	}
	// Read the requests before a worker consumes them.
	if pub := x.requestMsgIDs(); pub["replay:tired-0:4"] != 1 || pub["replay:tired-1:4"] != 1 {
		t.Fatalf("published %v, want the fourth replay of each", pub)
	}
	x.startWorker("w-fixed", simModel(t, ""))
	eventually(t, "both parked SERVER entries completed", 30*time.Second, func() bool {
		return res.count(ids, envelope.StatusCompleted) == len(ids)
	})
	eventually(t, "only the UNKNOWN entry left parked", 10*time.Second, func() bool {
		return x.streamState(x.cfg.Replay.ParkedStream).Msgs == 1
	})

	x.run(ctx, nil, "replay", "--parked", "--class", "UNKNOWN", "--yes").must(t, ExitHalted, "UNKNOWN without --force")
	x.run(ctx, nil, "replay", "--parked", "--class", "UNKNOWN", "--force", "--yes").must(t, ExitOK, "UNKNOWN with --force")
	eventually(t, "the parked stream empty", 10*time.Second, func() bool {
		return x.streamState(x.cfg.Replay.ParkedStream).Msgs == 0
	})
	eventually(t, "the UNKNOWN entry completed", 30*time.Second, func() bool {
		return res.count([]string{"odd-0"}, envelope.StatusCompleted) == 1
	})
	if left := x.dlqIDs(); len(left) != 0 {
		t.Fatalf("left in the DLQ: %v", left)
	}
}

// Nothing parked, no parked stream: replay --parked says so and succeeds.
func TestReplayParkedWithNothingParked(t *testing.T) {
	x := newFx(t, false)
	out := x.run(ctxT(t), nil, "replay", "--parked", "--yes").must(t, ExitOK, "nothing parked")
	contains(t, out.stderr, "nothing is parked")
	// Regression (found in review, seventeenth session): with --json a
	// script gets the summary JSON of an empty run, not an empty stdout.
	js := x.run(ctxT(t), nil, "replay", "--parked", "--yes", "--json").must(t, ExitOK, "nothing parked, --json")
	var sum map[string]any
	if err := json.Unmarshal([]byte(js.stdout), &sum); err != nil {
		t.Fatalf("replay --parked --json with no parked stream printed no JSON (%v):\n%q", err, js.stdout)
	}
}
