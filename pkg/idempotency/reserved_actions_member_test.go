package idempotency_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// Regression (found in review, eighteenth session): A tool's own result may carry any member name (it often passes a
// downstream service's JSON through). The wrapper stores the tool's
// actions under "_agentfleet_actions" in the same object and, on a replay,
// takes that member out again, whoever wrote it. A result that itself has a
// member of that name (and recorded no actions) is then answered
// differently on a replay than on the first call: here the replay fails
// outright, so a resumed invocation gets an error for a call whose effect
// already happened, instead of the stored result.
func TestReplayOfAResultWithTheReservedMemberName(t *testing.T) {
	s := idempotency.NewMemory()
	tl := &fnTool{name: "create_ticket", fn: func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		return tool.OK(map[string]any{"ticket": "T-1", "_agentfleet_actions": "from the ticket system"}), nil
	}}
	w := idempotency.Wrap(tl, s, idempotency.Options{})
	ctx := tool.WithContext(context.Background(), &tool.Context{InvocationID: "inv-reserved",
		Session: session.Key{App: "support", UserID: "u1", SessionID: "s1"}})
	args := map[string]any{"subject": "refund"}
	first, err := w.Run(ctx, args)
	if err != nil {
		t.Fatalf("first call: %v", err)
	}
	replayed, err := w.Run(ctx, args)
	if err != nil {
		t.Fatalf("replay of a completed call failed: %v (first call returned %v)", err, first)
	}
	if !reflect.DeepEqual(first, replayed) {
		t.Fatalf("replay = %v, first call = %v; want the stored result", replayed, first)
	}
}

// A tool result with a member of the reserved name and actions of its own:
// the replay gives back both, the member in the result and the actions on
// the tool context.
func TestReplayOfTheReservedMemberWithActions(t *testing.T) {
	s := idempotency.NewMemory()
	tl := &fnTool{name: "hand_off", fn: func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		tool.FromContext(ctx).SetState("ticket", "T-2")
		return tool.OK(map[string]any{"_agentfleet_actions": map[string]any{"end_invocation": true}}), nil
	}}
	w := idempotency.Wrap(tl, s, idempotency.Options{})
	run := func() (map[string]any, session.Actions) {
		tc := &tool.Context{InvocationID: "inv-2", Session: session.Key{App: "support", UserID: "u", SessionID: "s"}}
		res, err := w.Run(tool.WithContext(context.Background(), tc), nil)
		if err != nil {
			t.Fatal(err)
		}
		return res, tc.Actions()
	}
	first, firstActs := run()
	replayed, acts := run()
	if tl.runs.Load() != 1 {
		t.Fatalf("the tool ran %d times, want 1", tl.runs.Load())
	}
	if !reflect.DeepEqual(first, replayed) {
		t.Fatalf("replay = %v, first call = %v", replayed, first)
	}
	if acts.EndInvocation || acts.StateDelta["ticket"] != "T-2" || !reflect.DeepEqual(acts, firstActs) {
		t.Fatalf("replayed actions = %+v, want the first run's %+v (the tool's member is not an action)", acts, firstActs)
	}
}
