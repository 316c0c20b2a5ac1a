package tool

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// The Validator caches resolved schemas by *jsonschema.Schema pointer. The
// Tool interface does not ask Declaration to return the same pointer each
// time; a tool that builds its declaration per call (a value-receiver
// Declaration returning a literal) added one entry per call to the
// Runner's validator, for the life of the worker. The cache is bounded, and
// an uncached schema is still checked.
func TestValidatorCacheIsBounded(t *testing.T) {
	var v Validator
	decl := func() *model.ToolDeclaration {
		return &model.ToolDeclaration{Name: "lookup", Parameters: &jsonschema.Schema{
			Type: "object", Required: []string{"id"},
			Properties: map[string]*jsonschema.Schema{"id": {Type: "string"}},
		}}
	}
	for i := range 1000 {
		if err := v.Validate(decl(), map[string]any{"id": "x"}); err != nil {
			t.Fatal(err)
		}
		if i > MaxCachedSchemas && v.Validate(decl(), map[string]any{}) == nil {
			t.Fatal("an uncached schema let a call without its required field through")
		}
	}
	n := 0
	v.cache.Range(func(any, any) bool { n++; return true })
	if n > MaxCachedSchemas {
		t.Fatalf("validator cache holds %d resolved schemas after 1000 calls of one tool, want at most %d", n, MaxCachedSchemas)
	}
}

// A schema that does not resolve (here a pattern using look-ahead, which Go's
// regexp rejects: common in schemas imported from OpenAPI/JS tooling) turned
// off every check for that tool, silently: Validate returned nil. It is a
// *SchemaError now (not the model's bad arguments).
func TestUnresolvableSchemaIsASchemaError(t *testing.T) {
	var v Validator
	decl := &model.ToolDeclaration{Name: "refund", Parameters: &jsonschema.Schema{
		Type: "object", Required: []string{"order_id", "amount_cents"},
		Properties: map[string]*jsonschema.Schema{
			"order_id":     {Type: "string", Pattern: `^(?!TEST-)[A-Z]-\d+$`},
			"amount_cents": {Type: "integer"},
		},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
	}}
	if _, err := decl.Parameters.Resolve(nil); err == nil {
		t.Skip("schema resolves on this jsonschema-go version")
	}
	args := map[string]any{"amount_cents": "all of it", "admin": true}
	err := v.Validate(decl, args)
	var se *SchemaError
	if !errors.As(err, &se) || se.Tool != "refund" {
		t.Fatalf("Validate(%v) = %v, want a *SchemaError for refund (missing order_id, string amount and an unknown field all passed before)", args, err)
	}
	if errors.Is(err, ErrInvalidArguments) {
		t.Fatalf("a broken schema is reported as the model's bad arguments: %v", err)
	}
	if err := v.Check(decl); !errors.As(err, &se) {
		t.Fatalf("Check = %v, want a *SchemaError", err)
	}
}

// A schema that applies itself to the same value ({"$ref": "#"}, or a
// cycle through allOf) resolves, but validating with it overflowed the
// stack, which kills the process: Check refuses it. A recursive schema that
// descends into the value is fine.
func TestSameInstanceRefCycleIsASchemaError(t *testing.T) {
	var v Validator
	for _, tc := range []struct {
		schema string
		bad    bool
	}{
		{`{"$ref":"#"}`, true},
		{`{"$defs":{"a":{"allOf":[{"$ref":"#/$defs/b"}]},"b":{"not":{"$ref":"#/$defs/a"}}},"$ref":"#/$defs/a"}`, true},
		{`{"type":"object","properties":{"next":{"$ref":"#"}}}`, false},
		{`{"$ref":"#/$defs/a","$defs":{"a":{"type":"object","properties":{"n":{"$ref":"#/$defs/a"}}}}}`, false},
	} {
		var s jsonschema.Schema
		if err := json.Unmarshal([]byte(tc.schema), &s); err != nil {
			t.Fatal(err)
		}
		decl := &model.ToolDeclaration{Name: "t", Parameters: &s}
		err := v.Check(decl)
		var se *SchemaError
		if tc.bad != errors.As(err, &se) {
			t.Errorf("%s: Check = %v, want a SchemaError: %v", tc.schema, err, tc.bad)
		}
		if !tc.bad {
			if err := v.Validate(decl, map[string]any{"next": map[string]any{"next": map[string]any{}}}); err != nil {
				t.Errorf("%s: Validate = %v", tc.schema, err)
			}
		}
	}
}
