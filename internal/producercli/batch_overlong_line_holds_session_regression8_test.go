package producercli_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/producercli"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review of this session's fix, twenty-fifth
// session): a too-large invalid line holds its session's later lines
// (doc.go), but only while it was at most maxLineSize (2 x
// envelope.DefaultMaxSize): a longer one (here a 3 MiB pasted log in turn
// 2 of s1) was refused by ParseBatch without reading anything of it, so it
// named no session and held nothing: turn 3 was sent and answered at once,
// and after the line was fixed the rerun made the model see turns 1, 3, 2.
// Its agent, user and session are now read as the line is skipped
// (lineSession, one member at a time), so line 3 is held, naming line 2,
// and the rerun runs 2 and 3 in order.
func TestBatchOverlongLineHoldsItsSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, seen := heldSessionFleet(ctx, t)
	lines := s1ThreeTurns(t, "s1 turn 2 "+strings.Repeat("x", 3*envelope.DefaultMaxSize)) // a 3 MiB pasted log
	if lines[1].Err == nil || lines[0].Err != nil || lines[2].Err != nil {
		t.Fatalf("test premise: only line 2 is invalid: %v / %v / %v", lines[0].Err, lines[1].Err, lines[2].Err)
	}
	first := runHeldBatch(ctx, t, c, lines)
	if first[0].Outcome != producercli.OutcomeCompleted || first[1].Outcome != producercli.OutcomeInvalid {
		t.Fatalf("test premise: lines 1, 2: %+v %+v", first[0], first[1])
	}
	if !strings.Contains(first[1].Err.Error(), "longer than") {
		t.Fatalf("test premise: line 2 is refused as too long: %v", first[1].Err)
	}
	second := runHeldBatch(ctx, t, c, s1ThreeTurns(t, "s1 turn 2 (log attached separately)"))
	checkRerun(t, second, producercli.OutcomeSkipped, producercli.OutcomeCompleted, producercli.OutcomeCompleted)
	if r := first[2]; r.Submitted || r.Outcome != producercli.OutcomeHeld || r.Err == nil || !strings.Contains(r.Err.Error(), "line 2 ") {
		t.Errorf("line 3 was %s (submitted %v, %v) although line 2 of its session (s1, a 3 MiB pasted log) was refused unsent (%v); want %s, naming line 2",
			r.Outcome, r.Submitted, r.Err, first[1].Err, producercli.OutcomeHeld)
	}
	if got := fmt.Sprint(seen("s1")); got != "[1 2 3]" {
		t.Errorf("the model saw s1's turns %s, want [1 2 3]", got)
	}
}
