package tool_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

type review2Inner struct {
	Qty int `json:"qty"`
}

type review2EmbedArgs struct {
	OrderID string `json:"order_id"`
	review2Inner
}

// Regression (found in review of this session's fix, twenty-second
// session): decodeErrorDetail promises "naming the argument but no Go
// type, field or package". encoding/json puts an embedded struct's Go type name into
// UnmarshalTypeError.Field ("review2Inner.qty"), and the detail passes it
// on: the model is told about an argument that does not exist, named after
// a Go type. The argument is "qty" (embedded fields are the outer object's).
func TestDecodeDetailEmbeddedStructHasNoGoTypeName(t *testing.T) {
	f := tool.MustFunc("refund", "", func(context.Context, review2EmbedArgs) (map[string]any, error) {
		return tool.OK(nil), nil
	})
	_, err := f.Run(context.Background(), map[string]any{"order_id": "A-1", "qty": "two"})
	var ae *tool.ArgumentError
	if !errors.As(err, &ae) {
		t.Fatalf("Run = %v, want *ArgumentError", err)
	}
	if strings.Contains(ae.Detail, "review2Inner") || !strings.Contains(ae.Detail, "argument qty") {
		t.Errorf("detail = %q; want it to name argument qty, without the Go type review2Inner", ae.Detail)
	}
}

type review2WhenArgs struct {
	When time.Time `json:"when"`
}

// Regression (found in review of this session's fix, twenty-second
// session): a field whose type decodes itself (time.Time, netip.Addr, any type with
// UnmarshalJSON/UnmarshalText) fails with the method's own error, which
// decodeErrorDetail passes through with only "json: " trimmed:
// "Time.UnmarshalJSON: input is not a JSON string" (a Go method name) and
// no argument name at all.
func TestDecodeDetailCustomUnmarshalerNamesArgumentNotGo(t *testing.T) {
	f := tool.MustFunc("schedule", "", func(context.Context, review2WhenArgs) (map[string]any, error) {
		return tool.OK(nil), nil
	})
	_, err := f.Run(context.Background(), map[string]any{"when": 5})
	var ae *tool.ArgumentError
	if !errors.As(err, &ae) {
		t.Fatalf("Run = %v, want *ArgumentError", err)
	}
	if strings.Contains(ae.Detail, "UnmarshalJSON") || !strings.Contains(ae.Detail, "when") {
		t.Errorf("detail = %q; want it to name argument when, without Go method names", ae.Detail)
	}
}
