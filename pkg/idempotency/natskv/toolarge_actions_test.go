package natskv_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
	"github.com/agentfleet/agentfleet/pkg/idempotency/natskv"
)

// handOffTool acts (a hand-off), asks the loop to record a state change and
// end the invocation, and returns a result larger than NATS KV's 1 MiB
// max_payload (a document passed through).
type handOffTool struct{ runs atomic.Int64 }

func (h *handOffTool) Name() string        { return "hand_off" }
func (h *handOffTool) Description() string { return "hand off to a person" }
func (h *handOffTool) Declaration() *model.ToolDeclaration {
	return &model.ToolDeclaration{Name: "hand_off"}
}
func (h *handOffTool) Run(ctx context.Context, _ map[string]any) (map[string]any, error) {
	h.runs.Add(1)
	tc := tool.FromContext(ctx)
	tc.SetState("ticket", "T-1")
	tc.EndInvocation()
	return tool.OK(map[string]any{"ticket": "T-1", "transcript": strings.Repeat("x", 1100*1024)}), nil
}

// Regression (found in review, nineteenth session): a replay must give
// the loop the same state changes and the same end of the invocation as the
// run it replays (the wrapper's actionsKey contract; TestReplayKeepsTheTools
// Actions). When the result is too large for the store (NATS KV:
// ErrResultTooLarge), complete() swaps the whole stored JSON for the small
// result_not_recorded map, and the _agentfleet_actions member with the
// tool's actions goes with it. So the first run ends the invocation and
// records ticket=T-1, while a replay of the same call (a redelivery after a
// crash before the function-response event was stored) neither ends it (the
// model is called again and may run further tools after a hand-off) nor
// records the state. Correct: the result_not_recorded record carries the
// tool's actions too, and a replay applies them.
func TestTooLargeResultKeepsTheToolsActionsOnReplay(t *testing.T) {
	srv := natstest.RunServer(t)
	s := newStore(t, connect(t, srv.ClientURL()), natskv.Config{Bucket: "IDEM", Retention: time.Hour})
	tl := &handOffTool{}
	w := idempotency.Wrap(tl, s, idempotency.Options{StoreTimeout: 2 * time.Second, WaitTimeout: 2 * time.Second})
	run := func() (map[string]any, session.Actions) {
		tc := &tool.Context{InvocationID: "inv-big", Session: session.Key{App: "support", UserID: "u", SessionID: "s"}}
		res, err := w.Run(tool.WithContext(context.Background(), tc), nil)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		return res, tc.Actions()
	}
	_, first := run()
	if !first.EndInvocation || first.StateDelta["ticket"] != "T-1" {
		t.Fatalf("setup: first run's actions = %+v", first)
	}
	res, replayed := run()
	if tl.runs.Load() != 1 {
		t.Fatalf("the tool ran %d times, want 1", tl.runs.Load())
	}
	if res["reason"] != "result_not_recorded" && res["ticket"] != "T-1" {
		t.Fatalf("setup: replayed result %v", res["reason"])
	}
	if !replayed.EndInvocation || replayed.StateDelta["ticket"] != "T-1" {
		t.Errorf("replayed call's actions = %+v, want those of the run it replays: %+v (replayed result reason %v)",
			replayed, first, res["reason"])
	}
}
