package agent_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// Regression (left open in review of this session's fix, fixed in the
// twenty-fifth session): a state write that JSON cannot encode, made by a
// model callback (before-model, after-model) through cc.SetState, went
// with the next event and failed the store's append: the run ended as an
// *agent.SessionError, which the worker files as its own infrastructure
// down (Nak, redeliver, until a crash-loop dead letter pointing at a
// healthy Redis). It now ends as that callback's *agent.CallbackError
// naming the state member, and the write is not stored.
func TestModelCallbackStateNotJSONEndsAsCallbackError(t *testing.T) {
	svc := redisSessions(t)
	nan := func(cc *agent.CallbackContext) {
		cc.SetState("turns", 1)
		cc.SetState("score", math.NaN())
	}
	cases := []struct {
		name string
		hook string
		cb   agent.Callbacks
	}{
		{"before-model", "before-model", agent.Callbacks{BeforeModel: []agent.BeforeModelCallback{
			func(_ context.Context, cc *agent.CallbackContext, _ *model.Request) (*model.Response, error) {
				nan(cc)
				return nil, nil
			}}}},
		{"after-model", "after-model", agent.Callbacks{AfterModel: []agent.AfterModelCallback{
			func(_ context.Context, cc *agent.CallbackContext, _ *model.Response) (*model.Response, error) {
				nan(cc)
				return nil, nil
			}}}},
		{"after-model that fails", "after-model", agent.Callbacks{AfterModel: []agent.AfterModelCallback{
			func(_ context.Context, cc *agent.CallbackContext, _ *model.Response) (*model.Response, error) {
				nan(cc)
				return nil, errors.New("scoring failed")
			}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := agenttest.NewScriptedModel(agenttest.Reply(agenttest.Text("done")))
			r := &agent.Runner{Agent: &agent.Agent{Name: "support", Model: m, Callbacks: tc.cb}, Sessions: svc}
			sid := "s-model-cb-state-" + tc.hook + "-" + tc.name[len(tc.name)-5:]
			_, err := r.Invoke(context.Background(), agent.RunRequest{
				InvocationID: "inv-" + sid, UserID: "u1", SessionID: sid,
				Message: model.NewTextContent(model.RoleUser, "hello"),
			})
			failIfSessionError(t, err, "a model callback's state write")
			var ce *agent.CallbackError
			if !errors.As(err, &ce) || ce.Hook != tc.hook {
				t.Fatalf("err = %v (%T), want the %s callback's *agent.CallbackError", err, err, tc.hook)
			}
		})
	}
}
