package idempotency_test

import (
	"context"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// Regression (found in review, sixteenth session): a completed key answers "the stored result ... and the tool does
// not run" (DESIGN, Idempotency), and the replay is what a resumed
// invocation gets for a call whose function-response event was never
// stored (the agent loop holds that event until the next model response or
// the final flush; a crash or a failed flush loses it, and the redelivery
// runs the call again). The wrapper records only the result map: what the
// tool asked of the loop through its tool.Context (a state change, or
// EndInvocation for a hand-off) is not replayed. The resumed loop then sees
// no end action and calls the model again, running further tools after the
// invocation had ended, and the session state change is lost.
func TestReplayKeepsTheToolsActions(t *testing.T) {
	s := idempotency.NewMemory()
	tl := &fnTool{name: "hand_off", fn: func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		tc := tool.FromContext(ctx)
		tc.SetState("ticket", "T-1")
		tc.EndInvocation()
		return tool.OK(map[string]any{"ticket": "T-1"}), nil
	}}
	w := idempotency.Wrap(tl, s, idempotency.Options{})
	run := func() session.Actions {
		tc := &tool.Context{InvocationID: "inv-1", Session: session.Key{App: "support", UserID: "u", SessionID: "s"}}
		if _, err := w.Run(tool.WithContext(context.Background(), tc), nil); err != nil {
			t.Fatal(err)
		}
		return tc.Actions()
	}
	first := run()
	if !first.EndInvocation || first.StateDelta["ticket"] != "T-1" {
		t.Fatalf("setup: first run's actions = %+v", first)
	}
	replayed := run()
	if tl.runs.Load() != 1 {
		t.Fatalf("the tool ran %d times, want 1", tl.runs.Load())
	}
	if !replayed.EndInvocation || replayed.StateDelta["ticket"] != "T-1" {
		t.Errorf("replayed call's actions = %+v, want those of the run it replays: %+v", replayed, first)
	}
}
