package idempotency_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// refundReceipt is a typed tool's result whose ids are integers above
// 2^53.
type refundReceipt struct {
	OrderID  int64  `json:"order_id"`
	RefundID uint64 `json:"refund_id"`
	Status   string `json:"status"`
	// Passed through from a downstream service, under the member name
	// the wrapper stores the tool's actions in.
	Upstream map[string]any `json:"_agentfleet_actions"`
}

// Regression (left open in the twenty-second session, fixed in the
// twenty-fourth): a wrapped typed tool that returns an id above 2^53
// (9007199254740993) gave the model 9007199254740992 in its first run
// (normalizedResult made every number a float64) and again on every replay
// of the stored record (decodeResult used json.Unmarshal), although
// tool.ToMap had kept the digits: a redelivery, a crash or a DLQ replay
// told the model another order than the refund was made for. The same
// for the state change the tool recorded and for a member of the tool's
// own under the wrapper's reserved name. Both runs now give the digits.
func TestReplayKeepsBigIntegers(t *testing.T) {
	type args struct {
		OrderID string `json:"order_id"`
	}
	typed, err := tool.NewFunc("refund", "refunds an order", func(ctx context.Context, a args) (refundReceipt, error) {
		tool.FromContext(ctx).SetState("last_refund_id", uint64(18446744073709551615))
		return refundReceipt{OrderID: 9007199254740993, RefundID: 18446744073709551615, Status: tool.StatusOK,
			Upstream: map[string]any{"ledger_id": int64(9007199254740995)}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	w := idempotency.Wrap(typed, idempotency.NewMemory(), idempotency.Options{})
	call := func(what string) {
		t.Helper()
		tc := &tool.Context{InvocationID: "inv-big", Session: session.Key{App: "support", UserID: "u1", SessionID: "s1"}}
		res, err := w.Run(tool.WithContext(context.Background(), tc), map[string]any{"order_id": "A-1"})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		got, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		const want = `{"_agentfleet_actions":{"ledger_id":9007199254740995},"order_id":9007199254740993,"refund_id":18446744073709551615,"status":"ok"}`
		if string(got) != want {
			t.Errorf("%s: the model is given %s, want %s", what, got, want)
		}
		delta, err := json.Marshal(tc.Actions().StateDelta)
		if err != nil {
			t.Fatal(err)
		}
		if string(delta) != `{"last_refund_id":18446744073709551615}` {
			t.Errorf("%s: state change %s, want last_refund_id 18446744073709551615", what, delta)
		}
	}
	call("first run")
	call("replay")
}
