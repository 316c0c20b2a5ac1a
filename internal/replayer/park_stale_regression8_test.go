package replayer

import (
	"context"
	"testing"
	"time"
)

// Regression (found in review, twenty-fifth session): two on-call
// engineers at 3 a.m. One runs `park --class SERVER` on a terminal and is
// asked "park 5 entries? Type yes"; while the prompt waits, the other runs
// `replay --class SERVER --yes`, which replays all 5 and deletes them from
// the DLQ. The first then types yes.
//
// What a user saw: the park copied all 5 entries (from the plan it read
// before the prompt) into AGENT_DLQ_PARKED, found their DLQ entries gone,
// counted that as success and printed PARKED 5. The parked stream then
// held 5 entries "waiting for a person" whose work was replayed (and may
// have completed); stats said "parked 5", and a later `replay --parked`
// replayed them again.
//
// Now every park first checks that its entry is still in the DLQ
// (exec.park, entryGone): a gone entry is counted "already gone", exit 0,
// and no parked copy is stored.
func TestParkOfEntriesReplayedWhileItsPromptWaitedParksNothing(t *testing.T) {
	x := newFx(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	x.seed("ps", 5, "SERVER", 0)

	p := startPrompted(ctx, t, x, "park", "--class", "SERVER")

	// The other engineer replays them all meanwhile.
	x.run(ctx, nil, "replay", "--class", "SERVER", "--yes").must(t, ExitOK, "concurrent replay")
	if left := x.dlqIDs(); len(left) != 0 {
		t.Fatalf("the concurrent replay left %v in the DLQ", left)
	}
	if n := len(x.requestMsgIDs()); n != 5 {
		t.Fatalf("the concurrent replay published %d requests, want 5", n)
	}

	code := p.answerYes(ctx, t)
	if code != ExitOK {
		t.Errorf("park exit %d, want %d: entries another replayer handled are not an error", code, ExitOK)
	}
	if tot := parseSummaryTotal(t, p.o.String()); tot["PARKED"] != 0 || tot["ALREADY GONE"] != 5 || tot["ERRORS"] != 0 {
		t.Errorf("park summary total %v, want PARKED 0, ALREADY GONE 5, ERRORS 0", tot)
	}
	if st := x.streamState(x.cfg.Replay.ParkedStream); st.Msgs != 0 {
		t.Errorf("the parked stream holds %d copies of entries that another replayer had already replayed and removed from the DLQ; want 0 "+
			"(park must not park an entry that is no longer in the DLQ)", st.Msgs)
	}
}
