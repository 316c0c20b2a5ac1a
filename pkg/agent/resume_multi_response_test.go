package agent_test

import (
	"errors"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// A model call that yields more than one complete response (the loop
// supports it: model_step.go keeps the calls of the earlier ones) is one
// model call, charged once. A resumed invocation is charged the model
// calls of its earlier runs (RunRequest.FreshBudget, README "Budget
// semantics"), so after one such call it must still have
// MaxModelCalls-1 calls left, not MaxModelCalls-2.
func TestResumeChargesAMultiResponseCallOnce(t *testing.T) {
	f := newFixture(t,
		// Call 1: two complete responses in one call.
		agenttest.Reply(agenttest.Text("Let me check."), getOrder("A-1042")),
		// Call 2 fails: the invocation ends, to be resumed.
		agenttest.Fail(errors.New("boom")),
	)
	f.agent.MaxModelCalls = 2
	if _, err := f.run(t, "inv-1", "Where is A-1042?"); err == nil {
		t.Fatal("want the first run to fail")
	}
	if n := f.model.Calls(); n != 2 {
		t.Fatalf("first run made %d model calls, want 2", n)
	}
	// The first run made one successful model call; the resumed run has
	// one call left (as TestResumedBudgetCountsEarlierCalls).
	f.model.Push(agenttest.Reply(agenttest.Text("It shipped.")))
	events, err := f.run(t, "inv-1", "Where is A-1042?")
	if errors.Is(err, model.ErrCallBudgetExceeded) {
		t.Fatalf("resumed run refused its model call: %v (one model call with two responses was charged twice)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := agenttest.FinalText(events); got != "It shipped." {
		t.Fatalf("final = %q", got)
	}
}

// A model call whose first complete response asks for a tool and whose
// second is text: the first run runs the tool and calls the model again.
// If the run ends before the tool's response is stored (the documented
// crash window: the response is held for the next write), the resumed
// invocation must run the pending call and go on, as the first run would
// have; it must not take the text as the invocation's final answer.
func TestResumeRunsCallsOfAMultiResponseCall(t *testing.T) {
	f := newFixture(t,
		agenttest.Reply(getOrder("A-1042"), agenttest.Text("Checking that order now.")),
		agenttest.Reply(agenttest.Text("It shipped.")),
	)
	runs := countRuns(f)
	first := true
	// Writes: [user, call], [text], then [response, answer]: the third
	// fails, so the tool's response is never stored.
	f.runner.Sessions = &failNth{Service: f.sessions, n: 3, fail: &first}
	if _, err := f.run(t, "inv-1", "Where is A-1042?"); err == nil {
		t.Fatal("want the first run to fail on its third write")
	}
	if *runs != 1 {
		t.Fatalf("first run: get_order ran %d times, want 1", *runs)
	}
	f.model.Push(agenttest.Reply(agenttest.Text("It shipped.")))
	events, err := f.run(t, "inv-1", "Where is A-1042?")
	if err != nil {
		t.Fatal(err)
	}
	if *runs != 2 {
		t.Fatalf("resumed run: get_order ran %d times in all, want 2: its call has no stored response, "+
			"but the resume took %q as the final answer", *runs, agenttest.FinalText(events))
	}
	if got := agenttest.FinalText(events); got != "It shipped." {
		t.Fatalf("final = %q, want the answer after the tool", got)
	}
}
