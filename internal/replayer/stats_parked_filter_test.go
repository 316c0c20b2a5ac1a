package replayer

import (
	"encoding/json"
	"testing"
)

// Regression (found in review, twenty-second session): stats
// --class/--agent/--since filtered every count (rows, total, bad) but the
// parked count, which was the whole parked stream's: `stats --class SERVER`
// said "parked 2" when the only parked entries were UNKNOWN ones of another
// agent, and on-call read that SERVER entries were parked. The parked count
// now follows the same filter.
func TestStatsParkedCountFollowsTheFilter(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	x.seed("srv", 3, "SERVER", 0)
	x.seed("odd", 2, "UNKNOWN", 0)
	x.run(ctx, nil, "park", "--class", "UNKNOWN", "--yes").must(t, ExitOK, "park --class UNKNOWN")

	out := x.run(ctx, nil, "stats", "--class", "SERVER", "--json").must(t, ExitOK, "stats --class SERVER")
	var st Stats
	if err := json.Unmarshal([]byte(out.stdout), &st); err != nil {
		t.Fatal(err)
	}
	if st.Total != 3 || st.Parked != 0 {
		t.Fatalf("stats --class SERVER: total %d (want 3), parked %d (want 0: no SERVER entry is parked; the 2 parked are UNKNOWN)\n%s",
			st.Total, st.Parked, out.stdout)
	}
}
