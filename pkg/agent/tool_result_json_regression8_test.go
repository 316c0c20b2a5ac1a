package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/redissession"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// Regression (found in review, twenty-fifth session): a tool (a plain
// tool.Tool, not tool.Function) that returns a result JSON cannot encode,
// e.g. a ratio computed as 0/0 ({"status":"ok","ratio":NaN}), made the
// session write that stores its function response fail, and the loop
// ended the invocation with an *agent.SessionError. The worker files a
// SessionError as its own infrastructure being down (isInfra): it Naked
// the message with a delay, and every redelivery ran the tool again and
// failed the same way until max_deliveries, when the request was
// dead-lettered UNKNOWN as a crash loop, pointing on-call at a healthy
// Redis. The loop now checks what it would store when the call returns
// (after the after-tool callbacks) and ends the invocation with a
// *ToolError naming the tool and the member (dead-lettered once, as
// UNKNOWN), never with a SessionError. Each case runs against the Redis
// session store, whose append encodes events with encoding/json.
func TestToolResultNotJSONEndsAsToolError(t *testing.T) {
	svc := redisSessions(t)
	nanMap := func(context.Context, map[string]any) (map[string]any, error) {
		return map[string]any{"status": "ok", "ratio": math.NaN()}, nil
	}
	cases := []struct {
		name      string
		run       func(ctx context.Context, args map[string]any) (map[string]any, error)
		callbacks agent.Callbacks
		wrap      bool     // wrapped for idempotency (an in-memory store)
		want      []string // in the error's text
		wantType  any      // a pointer to the encoding/json error type in the chain
	}{
		{name: "NaN", run: nanMap,
			want: []string{"order_ratio", "result /ratio", "NaN"}, wantType: new(*json.UnsupportedValueError)},
		{name: "+Inf nested in a list", run: func(context.Context, map[string]any) (map[string]any, error) {
			return map[string]any{"status": "ok", "rows": []any{map[string]any{"score": 1.5}, map[string]any{"score": math.Inf(1)}}}, nil
		}, want: []string{"order_ratio", "result /rows/1/score", "+Inf"}, wantType: new(*json.UnsupportedValueError)},
		{name: "channel", run: func(context.Context, map[string]any) (map[string]any, error) {
			return map[string]any{"status": "ok", "updates": make(chan int)}, nil
		}, want: []string{"order_ratio", "result /updates", "chan int"}, wantType: new(*json.UnsupportedTypeError)},
		{name: "func", run: func(context.Context, map[string]any) (map[string]any, error) {
			return map[string]any{"status": "ok", "next": func() {}}, nil
		}, want: []string{"order_ratio", "result /next", "func()"}, wantType: new(*json.UnsupportedTypeError)},
		{name: "state change", run: func(ctx context.Context, _ map[string]any) (map[string]any, error) {
			tool.FromContext(ctx).SetState("last_ratio", math.NaN())
			return map[string]any{"status": "ok"}, nil
		}, want: []string{"order_ratio", "state /last_ratio", "NaN"}, wantType: new(*json.UnsupportedValueError)},
		{name: "error map", run: func(context.Context, map[string]any) (map[string]any, error) {
			m := tool.Error("division", false, "No orders to divide by.")
			m["ratio"] = math.NaN()
			return m, nil
		}, want: []string{"order_ratio", "result /ratio", "NaN"}, wantType: new(*json.UnsupportedValueError)},
		{name: "on-tool-error map", run: func(context.Context, map[string]any) (map[string]any, error) {
			return nil, errors.New("no orders")
		}, callbacks: agent.Callbacks{OnToolError: []agent.OnToolErrorCallback{
			func(context.Context, *agent.CallbackContext, *agent.ToolCall, error) (map[string]any, error) {
				return map[string]any{"status": "ok", "ratio": math.Inf(-1)}, nil
			}}},
			want: []string{"order_ratio", "result /ratio", "-Inf"}, wantType: new(*json.UnsupportedValueError)},
		{name: "after-tool callback", run: func(context.Context, map[string]any) (map[string]any, error) {
			return map[string]any{"status": "ok", "ratio": 0.5}, nil
		}, callbacks: agent.Callbacks{AfterTool: []agent.AfterToolCallback{
			func(_ context.Context, _ *agent.CallbackContext, _ *agent.ToolCall, r map[string]any) (map[string]any, error) {
				return map[string]any{"status": "ok", "ratio": r["ratio"].(float64) / 0 * 0}, nil
			}}},
			want: []string{"order_ratio", "result /ratio", "NaN"}, wantType: new(*json.UnsupportedValueError)},
		{name: "wrapped for idempotency", run: nanMap, wrap: true,
			// The wrapper cannot store it either: its error escalates
			// the same way (no on-tool-error callback answers it).
			want: []string{"order_ratio", "encode result", "NaN"}, wantType: new(*json.UnsupportedValueError)},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int32
			var ratio tool.Tool = failingTool{name: "order_ratio", run: func(ctx context.Context, args map[string]any) (map[string]any, error) {
				runs.Add(1)
				return tc.run(ctx, args)
			}}
			if tc.wrap {
				ratio = idempotency.Wrap(ratio, idempotency.NewMemory(), idempotency.Options{Agent: "support"})
			}
			m := agenttest.NewScriptedModel(
				agenttest.Reply(agenttest.Call("order_ratio", map[string]any{})),
				agenttest.Reply(agenttest.Text("done")),
			)
			r := &agent.Runner{Agent: &agent.Agent{Name: "support", Model: m, Tools: []tool.Tool{ratio}, Callbacks: tc.callbacks}, Sessions: svc}
			out, err := r.Invoke(context.Background(), agent.RunRequest{
				InvocationID: "inv-nan-" + string(rune('a'+i)), UserID: "u1", SessionID: "s-" + tc.name,
				Message: model.NewTextContent(model.RoleUser, "what is the refund ratio?"),
			})
			if runs.Load() != 1 {
				t.Fatalf("tool ran %d times, want 1", runs.Load())
			}
			failIfSessionError(t, err, "a tool result")
			var te *agent.ToolError
			if !errors.As(err, &te) || te.Tool != "order_ratio" {
				t.Fatalf("err = %v (%T), want a *agent.ToolError for order_ratio", err, err)
			}
			if !errors.As(err, tc.wantType) {
				t.Errorf("err %v does not wrap encoding/json's %T", err, tc.wantType)
			}
			checkErrNames(t, err, tc.want)
			if out != nil && out.Final != nil {
				t.Errorf("the invocation completed with %v after an unstorable result", out.Final.Content)
			}
		})
	}
}

// Regression (found in review, twenty-fifth session): the check above
// passes what the store encodes (numbers as json.Number, nested lists and
// maps, types with their own JSON form), and a result an after-tool
// callback repairs is stored; the good call of a parallel pair whose other
// call's result does not encode keeps its stored response.
func TestToolResultJSONCheckKeepsEncodableResults(t *testing.T) {
	svc := redisSessions(t)
	good := failingTool{name: "order_stats", run: func(context.Context, map[string]any) (map[string]any, error) {
		return map[string]any{"status": "ok", "count": json.Number("12"), "total": json.Number("1.5e3"), "empty": json.Number(""),
			"when": time.Unix(0, 0).UTC(), "tags": []string{"a"}, "rows": []map[string]any{{"x": 1}}, "small": float32(0.5),
			"labels": map[string]string{"k": "v"}, "nested": map[string]any{"l": []any{nil, true, "s", int64(3)}}}, nil
	}}
	repaired := failingTool{name: "order_ratio", run: func(context.Context, map[string]any) (map[string]any, error) {
		return map[string]any{"status": "ok", "ratio": math.NaN()}, nil
	}}
	m := agenttest.NewScriptedModel(
		agenttest.Reply(agenttest.Call("order_stats", map[string]any{}), agenttest.Call("order_ratio", map[string]any{})),
		agenttest.Reply(agenttest.Text("done")),
	)
	fix := func(_ context.Context, _ *agent.CallbackContext, call *agent.ToolCall, r map[string]any) (map[string]any, error) {
		if f, ok := r["ratio"].(float64); ok && math.IsNaN(f) {
			return map[string]any{"status": "ok", "ratio": nil}, nil
		}
		return nil, nil
	}
	r := &agent.Runner{Agent: &agent.Agent{Name: "support", Model: m, Tools: []tool.Tool{good, repaired},
		Callbacks: agent.Callbacks{AfterTool: []agent.AfterToolCallback{fix}}}, Sessions: svc}
	out, err := r.Invoke(context.Background(), agent.RunRequest{
		InvocationID: "inv-json-ok", UserID: "u1", SessionID: "s-ok",
		Message: model.NewTextContent(model.RoleUser, "order stats?"),
	})
	if err != nil {
		t.Fatalf("encodable results failed the invocation: %v", err)
	}
	if out.Final == nil {
		t.Fatal("no final response")
	}
	s, err := svc.Get(context.Background(), session.Key{App: "support", UserID: "u1", SessionID: "s-ok"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, ev := range s.Events {
		for _, fr := range ev.FunctionResponses() {
			got[fr.Name] = true
		}
	}
	if !got["order_stats"] || !got["order_ratio"] {
		t.Errorf("stored function responses %v, want both calls'", got)
	}

	// A parallel pair: the bad call escalates, the good one's response is stored.
	bad := failingTool{name: "order_ratio", run: func(context.Context, map[string]any) (map[string]any, error) {
		return map[string]any{"status": "ok", "ratio": math.NaN()}, nil
	}}
	m2 := agenttest.NewScriptedModel(
		agenttest.Reply(agenttest.Call("order_stats", map[string]any{}), agenttest.Call("order_ratio", map[string]any{})),
		agenttest.Reply(agenttest.Text("done")),
	)
	r2 := &agent.Runner{Agent: &agent.Agent{Name: "support", Model: m2, Tools: []tool.Tool{good, bad}}, Sessions: svc}
	_, err = r2.Invoke(context.Background(), agent.RunRequest{
		InvocationID: "inv-json-pair", UserID: "u1", SessionID: "s-pair",
		Message: model.NewTextContent(model.RoleUser, "order stats?"),
	})
	var te *agent.ToolError
	if !errors.As(err, &te) || te.Tool != "order_ratio" {
		t.Fatalf("err = %v, want a *agent.ToolError for order_ratio", err)
	}
	s, err = svc.Get(context.Background(), session.Key{App: "support", UserID: "u1", SessionID: "s-pair"})
	if err != nil {
		t.Fatal(err)
	}
	got = map[string]bool{}
	for _, ev := range s.Events {
		for _, fr := range ev.FunctionResponses() {
			got[fr.Name] = true
		}
	}
	if !got["order_stats"] || got["order_ratio"] {
		t.Errorf("stored function responses %v, want order_stats' only", got)
	}
}

// redisSessions is a session store on a Redis of t's own, whose append
// encodes events with encoding/json.
func redisSessions(t *testing.T) *redissession.Service {
	t.Helper()
	rdb, prefix := redistest.Client(t)
	svc, err := redissession.New(rdb, redissession.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// failIfSessionError fails t at once when err is an *agent.SessionError:
// what (a tool result, a callback's state write) JSON cannot encode must
// not end an invocation as a session failure.
func failIfSessionError(t *testing.T, err error, what string) {
	t.Helper()
	var se *agent.SessionError
	if errors.As(err, &se) {
		t.Fatalf("%s JSON cannot encode ended the invocation as a session (infrastructure) failure, "+
			"which the worker Naks and redelivers, re-running the tool: %v", what, err)
	}
}

// checkErrNames checks that err's text holds each of want.
func checkErrNames(t *testing.T, err error, want []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("err %q does not name %q", err, w)
		}
	}
}
