package tool_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

type reviewTwoStrings struct {
	OrderID string `json:"order_id"`
	Note    string `json:"note,omitempty"`
}

// Regression (found in review, sixteenth session): an *ArgumentError's Detail "says what is wrong with the
// arguments" and is what the model gets to fix its call. jsonschema-go names
// the offending argument by its schema pointer ("validating
// /properties/note: type: ..."), which SanitizeString's path pattern takes
// for a file path and redacts: the model is told "validating [redacted]:
// type: 3 has type "integer", want "string"" and cannot tell which of its
// string arguments is wrong.
func TestValidateDetailNamesTheField(t *testing.T) {
	f := tool.MustFunc("lookup", "", func(context.Context, reviewTwoStrings) (map[string]any, error) { return nil, nil })
	var v tool.Validator
	err := v.Validate(f.Declaration(), map[string]any{"order_id": "A-1042", "note": 3.0})
	var ae *tool.ArgumentError
	if !errors.As(err, &ae) {
		t.Fatalf("Validate = %v, want an *ArgumentError", err)
	}
	if !strings.Contains(ae.Detail, "note") {
		t.Errorf("detail %q does not name the argument \"note\" that has the wrong type", ae.Detail)
	}
}
