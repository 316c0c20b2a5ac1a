package agent_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// hangs is a tool run that waits until its context ends and returns what a
// client library usually returns then: an error of its own wrapping
// nothing of the context's.
func hangs(ctx context.Context, _ map[string]any) (map[string]any, error) {
	<-ctx.Done()
	return nil, errors.New("orders backend: request aborted")
}

// A tool that never answers is cut off at Agent.ToolTimeout: with
// ClassifyToolError the model gets the timeout map and the invocation goes
// on (it used to wait for ever).
func TestHungToolBecomesATimeoutMap(t *testing.T) {
	f := newFixture(t,
		agenttest.Reply(agenttest.Call("slow", nil)),
		agenttest.Reply(agenttest.Text("The orders service is slow; I will check again.")),
	)
	f.agent.ToolTimeout = 20 * time.Millisecond
	f.agent.Tools = append(f.agent.Tools, failingTool{name: "slow", run: hangs})
	f.agent.Callbacks.OnToolError = []agent.OnToolErrorCallback{agent.ClassifyToolError()}
	events, err := f.run(t, "inv-1", "where is my order")
	if err != nil {
		t.Fatalf("invocation failed: %v", err)
	}
	m := agenttest.ResponseFor(t, events, "slow")
	if m["status"] != "error" || m["reason"] != tool.ReasonTimeout || m["retryable"] != true {
		t.Fatalf("error map = %v, want the timeout map", m)
	}
	if f.model.Calls() != 2 {
		t.Fatalf("model calls = %d, want 2 (the model continued after the timeout)", f.model.Calls())
	}
}

// Without a callback that answers it, the timed-out call ends the
// invocation with a *ToolTimeoutError (matching DeadlineExceeded) inside
// the *ToolError.
func TestHungToolWithoutCallbackEndsTheInvocation(t *testing.T) {
	f := newFixture(t, agenttest.Reply(agenttest.Call("slow", nil)))
	f.agent.ToolTimeout = 20 * time.Millisecond
	f.agent.Tools = append(f.agent.Tools, failingTool{name: "slow", run: hangs})
	_, err := f.run(t, "inv-1", "where is my order")
	var te *agent.ToolError
	var tt *agent.ToolTimeoutError
	if !errors.As(err, &te) || !errors.As(err, &tt) || tt.Tool != "slow" || tt.After != 20*time.Millisecond {
		t.Fatalf("err = %v, want a *ToolError wrapping a *ToolTimeoutError of slow after 20ms", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want it to match context.DeadlineExceeded", err)
	}
}

// The default bounds every tool call; a negative ToolTimeout gives the
// tool only the invocation's context.
func TestToolTimeoutDefaultAndNone(t *testing.T) {
	if got := (agent.Agent{}).WithDefaults().ToolTimeout; got != agent.DefaultToolTimeout {
		t.Fatalf("default ToolTimeout = %v, want %v", got, agent.DefaultToolTimeout)
	}
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		want    bool
	}{{"default", 0, true}, {"none", -1, false}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, agenttest.Reply(agenttest.Call("probe", nil)), agenttest.Reply(agenttest.Text("done")))
			f.agent.ToolTimeout = tc.timeout
			var had bool
			f.agent.Tools = append(f.agent.Tools, failingTool{name: "probe", run: func(ctx context.Context, _ map[string]any) (map[string]any, error) {
				_, had = ctx.Deadline()
				return tool.OK(nil), nil
			}})
			if _, err := f.run(t, "inv-1", "probe"); err != nil {
				t.Fatal(err)
			}
			if had != tc.want {
				t.Fatalf("the tool's context had a deadline: %v, want %v", had, tc.want)
			}
		})
	}
}
