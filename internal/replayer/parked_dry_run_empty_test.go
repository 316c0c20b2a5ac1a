package replayer

import (
	"encoding/json"
	"testing"
)

// Regression (found in review, seventeenth session): e94bea8 made replay
// --parked with no parked stream print an empty run's summary and return
// before the dry-run branch. A dry run's --json output is the plan (a JSON
// array of PlannedJSON, as for every other dry run, and as this case
// printed before: "[]"); a script that reads the plan now gets a summary
// object it cannot decode, and the human output says nothing of a dry run.
func TestParkedDryRunWithNothingParkedPrintsAPlan(t *testing.T) {
	x := newFx(t, false)
	out := x.run(ctxT(t), nil, "replay", "--parked", "--dry-run", "--json").must(t, ExitOK, "dry run, nothing parked")
	var plan []PlannedJSON
	if err := json.Unmarshal([]byte(out.stdout), &plan); err != nil {
		t.Errorf("replay --parked --dry-run --json with nothing parked: stdout is not a plan (%v):\n%s", err, out.stdout)
	}
	txt := x.run(ctxT(t), nil, "replay", "--parked", "--dry-run").must(t, ExitOK, "dry run, nothing parked, text")
	contains(t, txt.stdout, "dry run: would replay 0")
}
