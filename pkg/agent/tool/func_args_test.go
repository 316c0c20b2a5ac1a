package tool_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

type stringTagArgs struct {
	OrderID string `json:"order_id"`
	Amount  int    `json:"amount_cents,string"`
}

// Regression (found in review, twenty-second session): NewFunc refuses
// argument fields with the json option ",string".
//
// NewFunc infers the schema from json tags, but ignores the ",string"
// option: the declaration tells the model amount_cents is an integer, the
// validator accepts an integer, and Run's decoder then refuses every
// integer ("invalid use of ,string struct tag"). No call the schema allows
// can succeed. NewFunc should either declare a string or refuse the type.
func TestFuncStringTagSchemaMatchesDecoder(t *testing.T) {
	f, err := tool.NewFunc("refund", "", func(_ context.Context, a stringTagArgs) (map[string]any, error) {
		return tool.OK(map[string]any{"amount_cents": a.Amount}), nil
	})
	if err != nil {
		return // refusing the type at construction is a fix
	}
	args := map[string]any{"order_id": "A-1", "amount_cents": 1299.0}
	var v tool.Validator
	if verr := v.Validate(f.Declaration(), args); verr != nil {
		return // a schema that says "string" is a fix too
	}
	if _, err := f.Run(context.Background(), args); err != nil {
		t.Fatalf("args the declared schema accepts are refused by Run: %v", err)
	}
}

type amountArgs struct {
	OrderID string `json:"order_id"`
	Amount  int64  `json:"amount_cents"`
}

// Regression (found in review, twenty-second session): the detail
// of an argument Run cannot decode names the argument and what it wants,
// not Go's error text.
//
// An integer the schema accepts ({"type":"integer"} has no bound for int64)
// but that overflows int64 passes the validator; Run's decode error then
// becomes the ArgumentError detail that ClassifyToolError shows the model:
// Go's own error text with the tool's Go type name ("json: cannot
// unmarshal number ... into Go struct field amountArgs.amount_cents
// of type int64"). The detail should name the argument and what is wrong,
// not Go internals.
func TestFuncDecodeErrorDetailHasNoGoInternals(t *testing.T) {
	f := tool.MustFunc("refund", "", func(context.Context, amountArgs) (map[string]any, error) {
		return tool.OK(nil), nil
	})
	args := map[string]any{"order_id": "A-1", "amount_cents": 1e19}
	var v tool.Validator
	if verr := v.Validate(f.Declaration(), args); verr != nil {
		return // the validator refusing it (a bound in the schema) is a fix
	}
	_, err := f.Run(context.Background(), args)
	var ae *tool.ArgumentError
	if !errors.As(err, &ae) {
		t.Fatalf("Run = %v, want *ArgumentError", err)
	}
	for _, leak := range []string{"Go struct field", "amountArgs", "json: "} {
		if strings.Contains(ae.Detail, leak) {
			t.Errorf("detail shown to the model %q contains Go internals %q", ae.Detail, leak)
		}
	}
}
