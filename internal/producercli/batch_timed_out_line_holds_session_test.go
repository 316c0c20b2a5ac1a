package producercli_test

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/producercli"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// Regression (found in review, twenty-fourth session): RunBatch promised "a
// session's lines run in file order: a later line of a session waits for
// the one before it", but waited only until the earlier line's --timeout:
// then the next line of the session was published at once, while the
// timed-out one was still queued (or still running). With the worker fleet
// down for the first minutes of a batch (here: no worker while the batch
// runs, a short --timeout standing for 2m against a longer outage), every
// line of a session ended up queued together, and when the fleet came
// back its workers took them concurrently: whichever won the session
// lock ran first, so turn 2 of a conversation was answered before turn 1
// (a real worker, its agent's model records the order it saw the turns).
// Now the later lines are held (not sent, OutcomeHeld naming the line
// they wait for), and a rerun once the fleet is back sends them in order.
func TestBatchTimedOutLineHoldsItsSessionsLaterLines(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var mu sync.Mutex
	ran := map[string][]int{} // session -> turns in the order the model saw them
	m := model.Func{ModelName: "test", Generate: func(ctx context.Context, req *model.Request, _ bool) iter.Seq2[*model.Response, error] {
		return func(yield func(*model.Response, error) bool) {
			var s string
			var turn int
			if _, err := fmt.Sscanf(lastUserText(req), "%s turn %d", &s, &turn); err == nil {
				mu.Lock()
				ran[s] = append(ran[s], turn)
				mu.Unlock()
			}
			yield(agenttest.Text("noted"), nil)
		}
	}}
	f := newBadInputFleet(t, ctx, time.Hour, m)
	c := f.client()

	const sessions, turns = 12, 3
	var file strings.Builder
	for s := range sessions {
		for turn := 1; turn <= turns; turn++ {
			fmt.Fprintf(&file, `{"agent":"support","user_id":"u%d","session_id":"s%d","text":"s%d turn %d"}`+"\n", s, s, s, turn)
		}
	}
	lines, err := producercli.ParseBatch(strings.NewReader(file.String()))
	if err != nil || len(lines) != sessions*turns {
		t.Fatalf("test premise: %d lines, %v", len(lines), err)
	}

	// The fleet is down while the batch runs.
	results, err := producercli.RunBatch(ctx, c, lines, producercli.BatchOptions{Concurrency: 4, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var violations []string
	for s := range sessions {
		first := results[s*turns]
		if first.Outcome != producercli.OutcomeTimeout || !first.Submitted {
			t.Fatalf("test premise: line %d %s (submitted %v), want a submitted line that timed out", first.Line, first.Outcome, first.Submitted)
		}
		for k := 1; k < turns; k++ {
			r := results[s*turns+k]
			if r.Submitted {
				violations = append(violations, fmt.Sprintf("line %d (s%d turn %d) submitted while line %d (turn 1) had no result", r.Line, s, k+1, first.Line))
			}
			if want := fmt.Sprintf("line %d of its session has no result", first.Line); r.Outcome != producercli.OutcomeHeld || r.Err == nil || r.Err.Error() != want {
				t.Errorf("line %d (s%d turn %d): %s (%v), want %s: %s", r.Line, s, k+1, r.Outcome, r.Err, producercli.OutcomeHeld, want)
			}
		}
	}

	var summary strings.Builder
	producercli.WriteSummary(&summary, results)
	heldRow := false
	for _, row := range strings.Split(summary.String(), "\n") {
		heldRow = heldRow || strings.Join(strings.Fields(row), " ") == fmt.Sprintf("held - %d", sessions*(turns-1))
	}
	if !heldRow || !strings.Contains(summary.String(), "Run the batch again") {
		t.Errorf("summary of a batch with held lines:\n%s\nwant a held row (%d) and what to do about them", summary.String(), sessions*(turns-1))
	}

	// The fleet comes back: what runs first? (Every submitted line runs.)
	f.startWorker("support")
	for i, l := range lines {
		if !results[i].Submitted {
			continue
		}
		actx, acancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := c.Await(actx, l.Request.InvocationID)
		acancel()
		if err != nil {
			t.Fatalf("line %d never ran: %v", l.No, err)
		}
	}
	mu.Lock()
	reordered := 0
	for s, order := range ran {
		for i := 1; i < len(order); i++ {
			if order[i] < order[i-1] {
				reordered++
				t.Logf("session %s: the model saw turns %v", s, order)
				break
			}
		}
	}
	mu.Unlock()
	if len(violations) > 0 {
		t.Fatalf("a session's later lines were sent while its earlier line, timed out, was still queued: %d such lines, e.g. %s; "+
			"once the fleet was back, %d of %d sessions ran their turns out of file order",
			len(violations), violations[0], reordered, sessions)
	}
	if reordered > 0 {
		t.Fatalf("%d of %d sessions ran their turns out of file order", reordered, sessions)
	}

	// The rerun, with the fleet back: the first turns are skipped, the
	// held ones sent in order.
	rerun, err := producercli.RunBatch(ctx, c, lines, producercli.BatchOptions{Concurrency: 4, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rerun {
		want := producercli.OutcomeCompleted
		if i%turns == 0 {
			want = producercli.OutcomeSkipped
		}
		if r.Outcome != want {
			t.Errorf("rerun: line %d %s (%v), want %s", r.Line, r.Outcome, r.Err, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for s := range sessions {
		if order := ran[fmt.Sprintf("s%d", s)]; fmt.Sprint(order) != "[1 2 3]" {
			t.Errorf("session s%d: the model saw turns %v after the rerun, want [1 2 3]", s, order)
		}
	}
}
