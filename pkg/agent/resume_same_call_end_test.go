package agent_test

import (
	"context"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// Regression (found in review, sixteenth session): One model call that gives two complete responses, each asking for a
// tool: an after-model guard ends the invocation on the second one. The
// first run runs neither call (the step ended). A redelivery of the same
// invocation must not run the first response's call either: notSkipped
// drops only the calls of the event that carries the end flag, not those
// of the earlier response of the same model call, which the first run
// skipped just as deliberately.
func TestResumeDoesNotRunCallsOfAnEarlierResponseOfTheEndedCall(t *testing.T) {
	f, charges := endingToolFixture(t, func() error { return nil },
		agenttest.Reply(agenttest.Call("charge", nil), agenttest.Call("note", nil)),
		agenttest.Reply(agenttest.Text("Done.")),
		agenttest.Reply(agenttest.Text("Done.")),
	)
	f.agent.Callbacks.AfterModel = append(f.agent.Callbacks.AfterModel,
		func(ctx context.Context, cc *agent.CallbackContext, resp *model.Response) (*model.Response, error) {
			for _, fc := range resp.FunctionCalls() {
				if fc.Name == "note" {
					cc.EndInvocation() // guard: stop this step
				}
			}
			return nil, nil
		})
	if _, err := f.invoke("inv-guard2"); err != nil {
		t.Fatalf("first run: %v", err)
	}
	if n := charges.Load(); n != 0 {
		t.Fatalf("first run: charge ran %d time(s), want 0 (the after-model callback ended the step)", n)
	}
	if _, err := f.invoke("inv-guard2"); err != nil {
		t.Fatalf("second run: %v", err)
	}
	if n := charges.Load(); n != 0 {
		t.Fatalf("a resumed invocation ran charge %d time(s), a call of the same model call its first run skipped (want 0)", n)
	}
}
