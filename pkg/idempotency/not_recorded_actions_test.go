package idempotency_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// limitStore is a store that refuses, as NATS KV does past its
// max_payload, every result larger than limit bytes (ErrResultTooLarge,
// nothing written).
type limitStore struct {
	idempotency.Store
	limit int
}

func (s *limitStore) Complete(ctx context.Context, t idempotency.Ticket, result json.RawMessage, retention time.Duration) error {
	if len(result) > s.limit {
		return fmt.Errorf("%w: %d bytes", idempotency.ErrResultTooLarge, len(result))
	}
	return s.Store.Complete(ctx, t, result, retention)
}

// runTwice runs w twice for one invocation and returns the second (replayed)
// call's result and both calls' actions.
func runTwice(t *testing.T, w tool.Tool, inv string, wantFirstErr bool) (map[string]any, session.Actions, session.Actions) {
	t.Helper()
	var acts [2]session.Actions
	var res map[string]any
	for i := range acts {
		tc := &tool.Context{InvocationID: inv, Session: session.Key{App: "support", UserID: "u", SessionID: "s"}}
		out, err := w.Run(tool.WithContext(context.Background(), tc), nil)
		if i == 0 && wantFirstErr {
			if err == nil {
				t.Fatal("the first call returned no error")
			}
		} else if err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
		res, acts[i] = out, tc.Actions()
	}
	return res, acts[0], acts[1]
}

// Regression (found in review, nineteenth session): the result_not_recorded
// record stored in place of a result the store cannot hold, or cannot
// encode, keeps what the tool asked of the loop, so a replay ends the
// invocation and records the state change as the first run did; state
// changes too large to store too fall back to the end of the invocation
// alone, then to the bare record, and the key is completed whatever
// happens (the tool never runs twice).
func TestNotRecordedResultKeepsTheToolsActions(t *testing.T) {
	big := strings.Repeat("x", 4096)
	for _, tc := range []struct {
		name      string
		result    map[string]any
		state     any
		encodeErr bool
		wantState bool
	}{
		{name: "result too large", result: tool.OK(map[string]any{"document": big}), state: "T-1", wantState: true},
		{name: "result and state too large", result: tool.OK(map[string]any{"document": big}), state: big},
		{name: "result does not encode", result: map[string]any{"status": "ok", "x": math.NaN()}, state: "T-1", encodeErr: true, wantState: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &limitStore{Store: idempotency.NewMemory(), limit: 1024}
			tl := &fnTool{name: "hand_off", fn: func(ctx context.Context, _ map[string]any) (map[string]any, error) {
				c := tool.FromContext(ctx)
				c.SetState("ticket", tc.state)
				c.EndInvocation()
				return tc.result, nil
			}}
			w := idempotency.Wrap(tl, s, idempotency.Options{})
			res, first, replayed := runTwice(t, w, "inv-"+strings.ReplaceAll(tc.name, " ", "-"), tc.encodeErr)
			if tl.runs.Load() != 1 {
				t.Fatalf("the tool ran %d times, want 1", tl.runs.Load())
			}
			if res["reason"] != "result_not_recorded" {
				t.Fatalf("replayed result = %v, want the result_not_recorded map", res)
			}
			if _, leaked := res["_agentfleet_actions"]; leaked {
				t.Fatalf("replayed result shows the wrapper's member: %v", res)
			}
			if !first.EndInvocation || first.StateDelta["ticket"] != tc.state {
				t.Fatalf("setup: first run's actions = %+v", first)
			}
			if !replayed.EndInvocation {
				t.Errorf("replayed call does not end the invocation: %+v", replayed)
			}
			if got := replayed.StateDelta["ticket"]; tc.wantState && got != tc.state {
				t.Errorf("replayed state ticket = %v, want %v", got, tc.state)
			} else if !tc.wantState && got != nil {
				t.Errorf("replayed state ticket is %d bytes, want none (too large for the store)", len(fmt.Sprint(got)))
			}
		})
	}
}
