package model_test

import (
	"reflect"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// RedactKeyValue removes the key from every string of a decoded JSON value,
// object keys included, copies maps and slices instead of changing them,
// and leaves other values as they are.
func TestRedactKeyValueRemovesTheKeyEverywhere(t *testing.T) {
	const key = "sk-test-0123456789abcdef"
	in := map[string]any{
		"@type":   "type.googleapis.com/google.rpc.ErrorInfo",
		"reason":  "API_KEY_INVALID key " + key,
		"n":       float64(3),
		"ok":      true,
		"nothing": nil,
		key:       "as an object key",
		"list":    []any{"x " + key, map[string]any{"deep": key}},
	}
	got, ok := model.RedactKeyValue(in, key).(map[string]any)
	if !ok {
		t.Fatalf("RedactKeyValue(map) = %T, want a map", got)
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			if model.RedactKey(v, key) != v {
				t.Errorf("the key is left in %q", v)
			}
		case map[string]any:
			for k, x := range v {
				walk(k)
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(got)
	if got["n"] != float64(3) || got["ok"] != true || got["nothing"] != nil {
		t.Errorf("other values changed: %v", got)
	}
	if len(got) != len(in) {
		t.Errorf("%d members, want %d", len(got), len(in))
	}
	if in["reason"] != "API_KEY_INVALID key "+key || !reflect.DeepEqual(in["list"].([]any)[1], map[string]any{"deep": key}) {
		t.Errorf("the input was changed: %v", in)
	}
}
