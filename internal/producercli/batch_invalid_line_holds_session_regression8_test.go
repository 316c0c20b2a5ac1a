package producercli_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/producercli"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review, twenty-fifth session): a batch job replays
// chat transcripts, one line per turn. A line whose JSON decodes, so that
// it names its agent, user and session, but that is invalid (here turn 2 of
// s1, a pasted log longer than a request may be, and turn 1 of s2, a
// member given twice) was reported invalid and held nothing ("A line that
// does not parse has no session to hold"): the session's next turn was
// sent at once and answered without it, and once the user fixed the line
// and ran the file again, the model saw s1's turns as 1, 3, 2. Such a line
// now holds its session's later lines, as the batch already did for an
// invalid line found at send time, a BAD_INPUT refusal and a reused id:
// they are reported held, and the rerun sends them after the fixed line.
// Both paths are covered: s1's invalid line comes while s1's turn 1 may
// be in flight (queued behind it), s2's is the session's first line.
func TestBatchInvalidLineHoldsItsSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, seen := heldSessionFleet(ctx, t)
	file := func(s1turn2, s2turn1 string) []producercli.Line {
		lines, err := producercli.ParseBatch(strings.NewReader(
			`{"agent":"support","user_id":"u1","session_id":"s1","text":"s1 turn 1"}` + "\n" +
				`{"agent":"support","user_id":"u1","session_id":"s1","text":"` + s1turn2 + `"}` + "\n" +
				`{"agent":"support","user_id":"u1","session_id":"s1","text":"s1 turn 3"}` + "\n" +
				s2turn1 + "\n" +
				`{"agent":"support","user_id":"u2","session_id":"s2","text":"s2 turn 2"}` + "\n"))
		if err != nil || len(lines) != 5 {
			t.Fatalf("test premise: %d lines, %v", len(lines), err)
		}
		return lines
	}
	long := "s1 turn 2 " + strings.Repeat("x", envelope.DefaultMaxSize) // a pasted log
	twice := `{"agent":"support","user_id":"u2","session_id":"s2","text":"s2 turn 1","text":"s2 turn 1 again"}`
	lines := file(long, twice)
	for i, l := range lines {
		if (l.Err != nil) != (i == 1 || i == 3) {
			t.Fatalf("test premise: only lines 2 and 4 are invalid: line %d %v", l.No, l.Err)
		}
	}
	first := runHeldBatch(ctx, t, c, lines)
	if first[1].Outcome != producercli.OutcomeInvalid || first[3].Outcome != producercli.OutcomeInvalid {
		t.Fatalf("test premise: lines 2 and 4 %+v %+v, want invalid", first[1], first[3])
	}
	if first[0].Outcome != producercli.OutcomeCompleted {
		t.Fatalf("line 1 (s1 turn 1, before the invalid line) %+v, want completed", first[0])
	}
	// The user fixes both lines and runs the file again.
	second := runHeldBatch(ctx, t, c, file("s1 turn 2 (log attached separately)",
		`{"agent":"support","user_id":"u2","session_id":"s2","text":"s2 turn 1"}`))
	for _, h := range []struct{ i, by int }{{2, 2}, {4, 4}} {
		r := first[h.i]
		if r.Submitted || r.Outcome != producercli.OutcomeHeld ||
			r.Err == nil || !strings.Contains(r.Err.Error(), fmt.Sprintf("line %d ", h.by)) {
			t.Errorf("line %d was %s (submitted %v, %v) although line %d of its session was refused unsent (%v): "+
				"want %s, naming line %d", r.Line, r.Outcome, r.Submitted, r.Err, h.by, first[h.by-1].Err, producercli.OutcomeHeld, h.by)
		}
	}
	checkRerun(t, second, producercli.OutcomeSkipped, producercli.OutcomeCompleted,
		producercli.OutcomeCompleted, producercli.OutcomeCompleted, producercli.OutcomeCompleted)
	if got := fmt.Sprint(seen("s1")); got != "[1 2 3]" {
		t.Errorf("the model saw s1's turns %s, want [1 2 3]", got)
	}
	if got := fmt.Sprint(seen("s2")); got != "[1 2]" {
		t.Errorf("the model saw s2's turns %s, want [1 2]", got)
	}
}

// An invalid line whose JSON does not decode, or names no session, holds
// nothing: its session is unknown, and a guess could hold another's.
func TestBatchUndecodableLineHoldsNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, seen := heldSessionFleet(ctx, t)
	lines, err := producercli.ParseBatch(strings.NewReader(
		`{"agent":"support","user_id":"u1","session_id":"s1","text":"s1 turn 1"` + "\n" + // not closed
			`{"agent":"support","user_id":"u1","text":"s1 turn 1"}` + "\n" + // no session
			`{"agent":"support","user_id":"u1","session_id":"s1","text":"s1 turn 2"}` + "\n"))
	if err != nil || len(lines) != 3 || lines[0].Err == nil || lines[1].Err == nil || lines[2].Err != nil {
		t.Fatalf("test premise: %+v %v", lines, err)
	}
	res := runHeldBatch(ctx, t, c, lines)
	if res[2].Outcome != producercli.OutcomeCompleted {
		t.Errorf("line 3 %s (%v) after lines naming no session: want completed", res[2].Outcome, res[2].Err)
	}
	if got := fmt.Sprint(seen("s1")); got != "[2]" {
		t.Errorf("the model saw s1's turns %s, want [2]", got)
	}
}

// heldSessionFleet is a fleet whose worker runs agent support on
// turnOrderModel (no request size limit), with a client on it and the
// turns the model saw per session.
func heldSessionFleet(ctx context.Context, t *testing.T) (*client.Client, func(s string) []int) {
	t.Helper()
	m, seen := turnOrderModel()
	f := newBadInputFleet(t, ctx, time.Hour, m)
	c := f.client()
	startSizeLimitedWorker(f, 0, "support")
	return c, seen
}

// s1ThreeTurns parses a batch of session s1's three turns, turn 2 with
// text turn2.
func s1ThreeTurns(t *testing.T, turn2 string) []producercli.Line {
	t.Helper()
	lines, err := producercli.ParseBatch(strings.NewReader(
		`{"agent":"support","user_id":"u1","session_id":"s1","text":"s1 turn 1"}` + "\n" +
			`{"agent":"support","user_id":"u1","session_id":"s1","text":"` + turn2 + `"}` + "\n" +
			`{"agent":"support","user_id":"u1","session_id":"s1","text":"s1 turn 3"}` + "\n"))
	if err != nil || len(lines) != 3 {
		t.Fatalf("test premise: %d lines, %v", len(lines), err)
	}
	return lines
}

// checkRerun checks the outcomes of a rerun's lines, in order.
func checkRerun(t *testing.T, second []producercli.LineResult, want ...producercli.Outcome) {
	t.Helper()
	for i, want := range want {
		if second[i].Outcome != want {
			t.Errorf("rerun: line %d %s (%v), want %s", second[i].Line, second[i].Outcome, second[i].Err, want)
		}
	}
}

// runHeldBatch runs lines on c, two at a time, each awaited up to 15s.
func runHeldBatch(ctx context.Context, t *testing.T, c *client.Client, lines []producercli.Line) []producercli.LineResult {
	t.Helper()
	res, err := producercli.RunBatch(ctx, c, lines, producercli.BatchOptions{Concurrency: 2, Timeout: 15 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return res
}
