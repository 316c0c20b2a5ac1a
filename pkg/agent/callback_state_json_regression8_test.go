package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// Regression (found in review of this session's fix, twenty-fifth
// session): the check of a tool call's result and state change looked at
// the tool's own state writes (tool.Context), not at those a callback of
// the call makes through its CallbackContext (cc.SetState), which the loop
// attaches to the next event it stores. A callback that recorded the
// tool's ratio in state (NaN when there were no orders) still failed the
// Redis append, and the run ended with an *agent.SessionError, which the
// worker files as its own infrastructure: Nak, redeliver, run the tool
// again, until a crash-loop dead letter pointing at a healthy Redis. Such
// a write is now checked when the call returns (and dropped): an answered
// call ends as that tool's *agent.ToolError naming the state member, an
// escalated one keeps its error; never a SessionError
// (TestDropUnencodableStateKeepsGoodWrites: the writes that encode stay).
func TestCallbackStateNotJSONEndsAsToolError(t *testing.T) {
	svc := redisSessions(t)
	cases := []struct {
		name      string
		calls     []string // the tools the model calls
		callbacks agent.Callbacks
		wantTool  string   // the *agent.ToolError's tool; "" for a *agent.CallbackError
		want      []string // in the error's text
	}{
		{name: "after-tool callback", calls: []string{"order_ratio"}, callbacks: agent.Callbacks{AfterTool: []agent.AfterToolCallback{
			func(_ context.Context, cc *agent.CallbackContext, _ *agent.ToolCall, _ map[string]any) (map[string]any, error) {
				cc.SetState("orders_seen", 0)
				cc.SetState("last_ratio", math.NaN()) // 0/0: no orders
				return nil, nil
			}}},
			wantTool: "order_ratio", want: []string{"order_ratio", "state /last_ratio", "NaN"}},
		{name: "nested member", calls: []string{"order_ratio"}, callbacks: agent.Callbacks{AfterTool: []agent.AfterToolCallback{
			func(_ context.Context, cc *agent.CallbackContext, _ *agent.ToolCall, _ map[string]any) (map[string]any, error) {
				cc.SetState("orders_seen", 0)
				cc.SetState("stats", map[string]any{"orders": 0, "ratio": math.Inf(1)})
				return nil, nil
			}}},
			wantTool: "order_ratio", want: []string{"order_ratio", "state /stats/ratio", "+Inf"}},
		{name: "before-tool callback", calls: []string{"order_ratio"}, callbacks: agent.Callbacks{BeforeTool: []agent.BeforeToolCallback{
			func(_ context.Context, cc *agent.CallbackContext, _ *agent.ToolCall) (map[string]any, error) {
				cc.SetState("orders_seen", 0)
				cc.SetState("last_ratio", math.NaN())
				return nil, nil
			}}},
			wantTool: "order_ratio", want: []string{"order_ratio", "state /last_ratio", "NaN"}},
		{name: "unknown tool's on-tool-error callback", calls: []string{"order_ratios"}, callbacks: agent.Callbacks{OnToolError: []agent.OnToolErrorCallback{
			func(_ context.Context, cc *agent.CallbackContext, _ *agent.ToolCall, _ error) (map[string]any, error) {
				cc.SetState("orders_seen", 0)
				cc.SetState("last_ratio", math.NaN())
				return tool.Error(tool.ReasonUnknownTool, false, "No such tool."), nil
			}}},
			wantTool: "order_ratios", want: []string{"order_ratios", "state /last_ratio", "NaN"}},
		// The other call's response is held, and the end's flush stores
		// it with the pending state writes.
		{name: "after-tool callback that escalates", calls: []string{"order_ratio", "order_stats"}, callbacks: agent.Callbacks{AfterTool: []agent.AfterToolCallback{
			func(_ context.Context, cc *agent.CallbackContext, call *agent.ToolCall, _ map[string]any) (map[string]any, error) {
				if call.Name != "order_ratio" {
					return nil, nil
				}
				cc.SetState("orders_seen", 0)
				cc.SetState("last_ratio", math.NaN())
				return nil, errors.New("ratio undefined")
			}}},
			want: []string{"after-tool", "ratio undefined"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int32
			ratio := failingTool{name: "order_ratio", run: func(context.Context, map[string]any) (map[string]any, error) {
				runs.Add(1)
				return map[string]any{"status": "ok", "orders": 0}, nil
			}}
			stats := failingTool{name: "order_stats", run: func(context.Context, map[string]any) (map[string]any, error) {
				return map[string]any{"status": "ok", "orders": 0}, nil
			}}
			var calls []*model.Response
			for _, c := range tc.calls {
				calls = append(calls, agenttest.Call(c, map[string]any{}))
			}
			m := agenttest.NewScriptedModel(
				agenttest.Reply(calls...),
				agenttest.Reply(agenttest.Text("done")),
			)
			r := &agent.Runner{Agent: &agent.Agent{Name: "support", Model: m, Tools: []tool.Tool{ratio, stats}, Callbacks: tc.callbacks}, Sessions: svc}
			sid := "s-r8d-cbstate-" + strings.ReplaceAll(tc.name, " ", "-")
			out, err := r.Invoke(context.Background(), agent.RunRequest{
				InvocationID: "inv-" + sid, UserID: "u1", SessionID: sid,
				Message: model.NewTextContent(model.RoleUser, "what is the refund ratio?"),
			})
			if runs.Load() > 1 {
				t.Fatalf("tool ran %d times, want at most 1", runs.Load())
			}
			failIfSessionError(t, err, "a callback's state write")
			if tc.wantTool != "" {
				var te *agent.ToolError
				if !errors.As(err, &te) || te.Tool != tc.wantTool {
					t.Fatalf("err = %v (%T), want a *agent.ToolError for %s naming the state member", err, err, tc.wantTool)
				}
				var ue *json.UnsupportedValueError
				if !errors.As(err, &ue) {
					t.Errorf("err %v does not wrap encoding/json's *json.UnsupportedValueError", err)
				}
			} else {
				var ce *agent.CallbackError
				if !errors.As(err, &ce) {
					t.Fatalf("err = %v (%T), want the callback's *agent.CallbackError", err, err)
				}
			}
			checkErrNames(t, err, tc.want)
			if out != nil && out.Final != nil {
				t.Errorf("the invocation completed with %v after an unstorable state change", out.Final.Content)
			}
			s, err := svc.Get(context.Background(), session.Key{App: "support", UserID: "u1", SessionID: sid})
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"last_ratio", "stats"} {
				if _, ok := s.State[k]; ok {
					t.Errorf("stored state %v holds %q", s.State, k)
				}
			}
		})
	}
}
