package tool_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// Regression (found in review, twenty-second session): Sanitize
// keeps maps, slices and numbers of any Go type (json.Number included),
// sanitised as their JSON form would be.
//
// Sanitize's doc (before the fix): "every string (also inside nested maps
// and slices) passed through SanitizeString". Nested maps and slices of ordinary Go
// types (map[string]string, []int, []map[string]any, json.Number) are
// replaced whole by "[redacted]" instead, so the model loses exactly the
// structured detail the seed asks tools to give ("which field is wrong"),
// and the same map answers differently once it has been through JSON (a
// call answered from its stored idempotency record: map[string]any, kept).
func TestSanitizeKeepsNestedGoMapsAndSlices(t *testing.T) {
	m := tool.Error(tool.ReasonBadArguments, false, "Fix the fields.")
	m["fields"] = map[string]string{"email": "must contain @"}
	m["valid_quantities"] = []int{1, 2, 5}
	m["items"] = []map[string]any{{"sku": "X-1", "problem": "out of stock"}}
	m["retry_after_s"] = json.Number("30")

	got := tool.Sanitize(m)

	raw, _ := json.Marshal(m)
	var roundTripped map[string]any
	_ = json.Unmarshal(raw, &roundTripped)
	want := tool.Sanitize(roundTripped)

	for _, k := range []string{"fields", "valid_quantities", "items", "retry_after_s"} {
		if got[k] == "[redacted]" {
			t.Errorf("%s = [redacted]; want its (sanitised) content, as after a JSON round trip: %v", k, want[k])
		}
	}
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	var g, w any
	_ = json.Unmarshal(gj, &g)
	_ = json.Unmarshal(wj, &w)
	if !reflect.DeepEqual(g, w) {
		t.Errorf("the model sees\n  %s\nfirst time and\n  %s\nafter a resume", gj, wj)
	}
}
