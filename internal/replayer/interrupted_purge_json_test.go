package replayer

import (
	"encoding/json"
	"testing"
)

// Regression (found in review, twenty-fourth session): an interrupted purge
// --json printed nothing on stdout: a script reading
// the JSON gets no object at all (replay and park --json print their
// summary when interrupted; purge's {"purged","already_gone"} is skipped
// by the early return of purgeInterrupted).
func TestInterruptedPurgeJSONPrintsWhatItDeleted(t *testing.T) {
	x := newFx(t, false)
	x.seed("pj", 3, "UNKNOWN", 0)
	code, stdout, _ := interruptPurgeMidDelete(t, x, "--class", "UNKNOWN", "--json")
	if code != ExitInterrupted {
		t.Fatalf("exit %d, want %d", code, ExitInterrupted)
	}
	var got map[string]int
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("interrupted purge --json: stdout %q is not the JSON object of what it deleted: %v", stdout, err)
	}
}
