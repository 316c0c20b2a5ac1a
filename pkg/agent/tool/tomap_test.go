package tool_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

type foundOrder struct {
	Status  string `json:"status"`
	OrderID int64  `json:"order_id"`
}

// Regression (found in review, twenty-second session): ToMap keeps numbers
// as json.Number, not float64.
//
// A typed tool returning an int64 id above 2^53 (snowflake-style ids,
// payment-provider ids) must reach the model with the same digits: the
// model calls the next tool with the id it was shown.
func TestToMapKeepsLargeIntegersExact(t *testing.T) {
	const id int64 = 1<<53 + 1 // 9007199254740993
	f := tool.MustFunc("find_order", "", func(context.Context, struct{}) (foundOrder, error) {
		return foundOrder{Status: "ok", OrderID: id}, nil
	})
	out, err := f.Run(context.Background(), map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"order_id":9007199254740993`) {
		t.Fatalf("result the model sees = %s, want order_id 9007199254740993 (ToMap went through float64 and changed the id)", raw)
	}
}

// Regression (found in review, twenty-second session): a result that
// marshals to null is an error, not an empty success.
//
// ToMap's doc: "anything else must marshal to a JSON object". A typed tool
// returning a nil *T with a nil error marshals to null, which is no object;
// before the fix it came back as (nil, nil), and the agent loop answered the model
// with {} as a success.
func TestFuncNilPointerResultIsAnError(t *testing.T) {
	f := tool.MustFunc("find_order", "", func(context.Context, struct{}) (*foundOrder, error) {
		return nil, nil // e.g. "not found" forgotten
	})
	out, err := f.Run(context.Background(), map[string]any{})
	if err == nil {
		t.Fatalf("Run = %#v, nil error; want an error: a null result is not a JSON object", out)
	}
	if _, err := tool.ToMap((*foundOrder)(nil)); err == nil {
		t.Fatal("ToMap((*T)(nil)) = nil error, want 'result is not a JSON object'")
	}
}
