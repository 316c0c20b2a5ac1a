package agent_test

import (
	"context"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// Regression (found in review, sixteenth session): an after-model callback (a guard) that ends the invocation on a response
// asking for a tool stops the loop before the tool runs
// (CallbackContext.EndInvocation: "stop after the current step"; the model
// step is that step). A redelivery of that invocation (the worker crashed
// after the events were stored, before it recorded the completion) must
// not run the call the first run deliberately did not run: the resumed
// run must end where the first one ended.
func TestResumeDoesNotRunCallsAnAfterModelEndSkipped(t *testing.T) {
	f, charges := endingToolFixture(t, func() error { return nil },
		agenttest.Reply(agenttest.Call("charge", nil)),
		agenttest.Reply(agenttest.Text("Charged.")),
	)
	f.agent.Callbacks.AfterModel = append(f.agent.Callbacks.AfterModel,
		func(ctx context.Context, cc *agent.CallbackContext, resp *model.Response) (*model.Response, error) {
			if len(resp.FunctionCalls()) > 0 {
				cc.EndInvocation() // guard: this call must not run
			}
			return nil, nil
		})
	if _, err := f.invoke("inv-guard"); err != nil {
		t.Fatalf("first run: %v", err)
	}
	if n := charges.Load(); n != 0 {
		t.Fatalf("first run: charge ran %d time(s), want 0 (the after-model callback ended the invocation)", n)
	}
	// The same invocation again (redelivered): it already ended.
	if _, err := f.invoke("inv-guard"); err != nil {
		t.Fatalf("second run: %v", err)
	}
	if n := charges.Load(); n != 0 {
		t.Fatalf("a resumed invocation ran a call its first run skipped because an after-model callback ended it: charge ran %d time(s) (want 0), model calls = %d", n, f.model.Calls())
	}
}
