package producercli_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/producercli"
)

// Regression (found in review of this session's fix, twenty-fifth
// session): an invalid batch line whose JSON names its agent, user and
// session holds its session's later lines, so that a rerun sends them
// after the fixed line; but a line refused because it is not valid UTF-8
// (a turn with "café" saved as Windows-1252, the commonest such line in a
// pasted transcript) was refused before its JSON was read, with no
// session: turn 3 of s1 was sent and answered at once, and after the user
// re-saved the file as UTF-8 and ran it again the model saw s1's turns as
// 1, 3, 2. Its names are now read (lineSession: a name with a bad byte is
// unknown), so line 3 is held, naming line 2, and the rerun runs 2 and 3
// in order.
func TestBatchInvalidUTF8LineHoldsItsSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, seen := heldSessionFleet(ctx, t)
	lines := s1ThreeTurns(t, "s1 turn 2 caf\xe9") // Windows-1252 é
	if lines[1].Err == nil || !strings.Contains(lines[1].Err.Error(), "UTF-8") || lines[0].Err != nil || lines[2].Err != nil {
		t.Fatalf("test premise: only line 2 is invalid (not UTF-8): %v / %v / %v", lines[0].Err, lines[1].Err, lines[2].Err)
	}
	first := runHeldBatch(ctx, t, c, lines)
	if first[0].Outcome != producercli.OutcomeCompleted || first[1].Outcome != producercli.OutcomeInvalid {
		t.Fatalf("test premise: lines 1, 2: %+v %+v", first[0], first[1])
	}
	// The user saves the file as UTF-8 and runs it again.
	second := runHeldBatch(ctx, t, c, s1ThreeTurns(t, "s1 turn 2 café"))
	checkRerun(t, second, producercli.OutcomeSkipped, producercli.OutcomeCompleted, producercli.OutcomeCompleted)
	if r := first[2]; r.Submitted || r.Outcome != producercli.OutcomeHeld || r.Err == nil || !strings.Contains(r.Err.Error(), "line 2 ") {
		t.Errorf("line 3 was %s (submitted %v, %v) although line 2 of its session (s1) was refused unsent as not UTF-8; want %s, naming line 2",
			r.Outcome, r.Submitted, r.Err, producercli.OutcomeHeld)
	}
	if got := fmt.Sprint(seen("s1")); got != "[1 2 3]" {
		t.Errorf("the model saw s1's turns %s, want [1 2 3]", got)
	}
}
