package agent_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// endingToolFixture: an agent whose "handoff" tool ends the invocation
// (tool.Context.EndInvocation) and whose "charge" tool counts its runs (a
// side effect the model may ask for).
func endingToolFixture(t *testing.T, flaky func() error, steps ...agenttest.Step) (*fixture, *atomic.Int32) {
	t.Helper()
	f := newFixture(t, steps...)
	var charges atomic.Int32
	handoff := tool.MustFunc("handoff", "", func(ctx context.Context, _ struct{}) (map[string]any, error) {
		tool.FromContext(ctx).EndInvocation()
		return tool.OK(nil), nil
	})
	charge := tool.MustFunc("charge", "", func(ctx context.Context, _ struct{}) (map[string]any, error) {
		charges.Add(1)
		return tool.OK(nil), nil
	})
	note := tool.MustFunc("note", "", func(ctx context.Context, _ struct{}) (map[string]any, error) {
		if err := flaky(); err != nil {
			return nil, err
		}
		return tool.OK(nil), nil
	})
	f.agent.Tools = append(f.agent.Tools, handoff, charge, note)
	return f, &charges
}

func (f *fixture) invoke(invocationID string) (*agent.Outcome, error) {
	return f.runner.Invoke(context.Background(), agent.RunRequest{
		InvocationID: invocationID, UserID: "u1", SessionID: "s1",
		Message: model.NewTextContent(model.RoleUser, "hand me over"),
	})
}

// An invocation that a tool ended (end-invocation action) and that runs
// again under the same id (a redelivery after the worker failed to record
// its completion, once its events were stored) must be recognised as
// finished, as one that ended with a final model response is: nothing is
// run again. (Before the fix the runner called the model again and ran
// the tools that call asked for.)
func TestResumeAfterAToolEndedTheInvocationRunsNothing(t *testing.T) {
	f, charges := endingToolFixture(t, func() error { return nil },
		agenttest.Reply(agenttest.Call("handoff", nil)),
		// Only reached if the ended invocation is run on.
		agenttest.Reply(agenttest.Call("charge", nil)),
		agenttest.Reply(agenttest.Text("Charged.")),
	)
	if _, err := f.invoke("inv-end"); err != nil {
		t.Fatalf("first run: %v", err)
	}
	if n := f.model.Calls(); n != 1 {
		t.Fatalf("first run: model calls = %d, want 1", n)
	}
	// The same invocation again (redelivered): it already ended.
	if _, err := f.invoke("inv-end"); err != nil {
		t.Fatalf("second run: %v", err)
	}
	if n := f.model.Calls(); n != 1 || charges.Load() != 0 {
		t.Fatalf("an invocation ended by a tool ran on when resumed: model calls = %d (want 1), charge ran %d time(s) (want 0)",
			f.model.Calls(), charges.Load())
	}
}

// Same, when the step that ended the invocation had a second call that
// failed (escalated): the resumed run completes that call, and must then
// end as the first run's tool asked, not call the model again.
func TestResumedStepKeepsTheEndOfItsFirstRun(t *testing.T) {
	var failOnce atomic.Bool
	failOnce.Store(true)
	errDown := errors.New("downstream unavailable")
	f, charges := endingToolFixture(t, func() error {
		if failOnce.CompareAndSwap(true, false) {
			return errDown
		}
		return nil
	},
		agenttest.Reply(agenttest.Calls(
			&model.FunctionCall{Name: "handoff", Args: map[string]any{}},
			&model.FunctionCall{Name: "note", Args: map[string]any{}},
		)),
		agenttest.Reply(agenttest.Call("charge", nil)),
		agenttest.Reply(agenttest.Text("Charged.")),
	)
	if _, err := f.invoke("inv-end2"); !errors.Is(err, errDown) {
		t.Fatalf("first run: err = %v, want the note tool's failure", err)
	}
	if _, err := f.invoke("inv-end2"); err != nil {
		t.Fatalf("second run: %v", err)
	}
	if n := f.model.Calls(); n != 1 || charges.Load() != 0 {
		t.Fatalf("the resumed step forgot its handoff's end: model calls = %d (want 1), charge ran %d time(s) (want 0)",
			f.model.Calls(), charges.Load())
	}
}
