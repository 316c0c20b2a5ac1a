package agent_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// A before-model callback that short-circuits (a response cache, a guard)
// with a tool-protocol break ("MALFORMED_FUNCTION_CALL" and nothing else)
// is not charged to the call budget, so asking again was unbounded (the
// callback answered the same way each time). A short-circuited break is
// final: only a real model call's break is asked again.
func TestShortCircuitedToolProtocolBreakIsFinal(t *testing.T) {
	f := newFixture(t)
	f.agent.MaxModelCalls = 3
	const giveUp = 200
	var n int
	errSpin := errors.New("test: the loop is still asking after 200 short-circuits")
	f.agent.Callbacks.BeforeModel = []agent.BeforeModelCallback{func(context.Context, *agent.CallbackContext, *model.Request) (*model.Response, error) {
		n++
		if n > giveUp {
			return nil, errSpin // stop the test's loop; the runner would not
		}
		return malformed(), nil // e.g. a cached answer to the same request
	}}
	_, err := f.runner.Invoke(context.Background(), agentReq("inv-spin"))
	if errors.Is(err, errSpin) || n > f.agent.MaxModelCalls+1 {
		t.Fatalf("before-model short-circuit with a tool-protocol break: %d loop iterations, none charged (budget %d), ended by %v",
			n, f.agent.MaxModelCalls, err)
	}
}
