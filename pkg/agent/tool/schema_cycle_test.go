package tool

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// sameInstanceCycle started only at the root and followed only "#"/"#/..."
// refs, so these schemas pass Check, and validating an argument with each
// (e.g. {"x": 1} for the first two) overflows the stack ("fatal error:
// stack overflow", no recover): a cycle under a descending keyword
// (properties, items), one through $anchor, $dynamicRef or an $id-based
// URI, or a percent-encoded pointer the resolver decodes.
func TestSameInstanceCyclesCheckMisses(t *testing.T) {
	for _, schema := range []string{
		`{"type":"object","properties":{"x":{"$ref":"#/properties/x"}}}`,
		`{"type":"object","properties":{"x":{"$ref":"#/$defs/a"}},"$defs":{"a":{"$ref":"#/$defs/a"}}}`,
		`{"$defs":{"a":{"$anchor":"A","$ref":"#A"}},"$ref":"#A"}`,
		`{"$dynamicAnchor":"n","$dynamicRef":"#n"}`,
		`{"$id":"https://e.example/s","$ref":"https://e.example/s"}`,
		`{"$defs":{"a":{"$ref":"#/%24defs/a"}},"$ref":"#/$defs/a"}`,
	} {
		var s jsonschema.Schema
		if err := json.Unmarshal([]byte(schema), &s); err != nil {
			t.Fatal(err)
		}
		var v Validator
		err := v.Check(&model.ToolDeclaration{Name: "t", Parameters: &s})
		var se *SchemaError
		if !errors.As(err, &se) {
			t.Errorf("%s: Check = %v, want a *SchemaError (validating with it overflows the stack)", schema, err)
		}
	}
}
