package tool

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

type simpleArgs struct {
	OrderID     string  `json:"order_id" jsonschema:"Order id"`
	AmountCents int     `json:"amount_cents"`
	Reason      string  `json:"reason,omitempty"`
	Ratio       float64 `json:"ratio,omitempty"`
	Urgent      bool    `json:"urgent,omitempty"`
}

// simpleSchemas are the schemas the fuzz target checks: a struct's, and an
// open object (no additionalProperties).
func simpleSchemas(t testing.TB) []*jsonschema.Schema {
	closed, err := jsonschema.For[simpleArgs](nil)
	if err != nil {
		t.Fatal(err)
	}
	open := &jsonschema.Schema{Type: "object", Required: []string{"n"}, Properties: map[string]*jsonschema.Schema{
		"n": {Type: "integer"}, "s": {Type: "string", Description: "text"},
	}}
	return []*jsonschema.Schema{closed, open}
}

// The plain shapes compile, and the support workload's arguments take the
// fast path; anything with another keyword does not compile.
func TestSimpleSchemaCompiles(t *testing.T) {
	ss := simpleSchemas(t)
	for i, s := range ss {
		if compileSimple(s) == nil {
			t.Fatalf("schema %d did not compile", i)
		}
	}
	refund := map[string]any{"order_id": "A-1042", "amount_cents": 1250.0, "reason": "customer request"}
	if !compileSimple(ss[0]).accepts(refund) {
		t.Fatalf("the refund arguments %v do not take the fast path", refund)
	}
	// Go integers (what the simulated provider builds) fit integer and
	// number for the general validator too.
	ints := map[string]any{"order_id": "A-1042", "amount_cents": 1250, "ratio": int64(2)}
	r, err := ss[0].Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !compileSimple(ss[0]).accepts(ints) {
		t.Fatalf("%v does not take the fast path", ints)
	}
	if err := r.Validate(ints); err != nil {
		t.Fatalf("the general validator refuses %v, which the fast check accepts: %v", ints, err)
	}
	type withPointer struct {
		P *string `json:"p"`
	}
	type withUint struct {
		U uint8 `json:"u"`
	}
	type nested struct {
		N simpleArgs `json:"n"`
	}
	for name, f := range map[string]func(*jsonschema.ForOptions) (*jsonschema.Schema, error){
		"nullable": jsonschema.For[withPointer],
		"bounded":  jsonschema.For[withUint],
		"nested":   jsonschema.For[nested],
	} {
		s, err := f(nil)
		if err != nil {
			t.Fatal(err)
		}
		if compileSimple(s) != nil {
			t.Errorf("%s: compiled, want nil (it has a keyword the fast check does not know)", name)
		}
	}
	enum := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"e": {Type: "string", Enum: []any{"a"}}}}
	if compileSimple(enum) != nil {
		t.Error("enum: compiled, want nil")
	}
}

// Arguments the fast check refuses still get the general validator's
// answer, with its detail.
func TestSimpleSchemaFallsBack(t *testing.T) {
	var v Validator
	s := simpleSchemas(t)[0]
	decl := &model.ToolDeclaration{Name: "refund", Parameters: s}
	for _, args := range []map[string]any{
		{"order_id": "A-1", "amount_cents": 1.5},
		{"order_id": "A-1"},
		{"order_id": "A-1", "amount_cents": 1.0, "extra": true},
		{"order_id": 7.0, "amount_cents": 1.0},
		{"order_id": "A-1", "amount_cents": math.Inf(1)},
	} {
		if err := v.Validate(decl, args); err == nil {
			t.Errorf("Validate(%v) = nil, want an *ArgumentError", args)
		}
	}
}

// FuzzSimpleSchemaAgrees: whatever the fast check accepts, the general
// validator accepts too.
func FuzzSimpleSchemaAgrees(f *testing.F) {
	for _, s := range []string{
		`{"order_id":"A-1","amount_cents":1250}`, `{"order_id":"A-1","amount_cents":1.5}`,
		`{"order_id":"A-1","amount_cents":1e300,"ratio":-0.5,"urgent":true,"reason":""}`,
		`{"n":3,"s":"x","other":[1]}`, `{"n":null}`, `{"order_id":null,"amount_cents":1}`,
	} {
		f.Add([]byte(s))
	}
	ss := simpleSchemas(f)
	var resolved []*jsonschema.Resolved
	var compiled []*simpleSchema
	for _, s := range ss {
		r, err := s.Resolve(nil)
		if err != nil {
			f.Fatal(err)
		}
		resolved, compiled = append(resolved, r), append(compiled, compileSimple(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var args map[string]any
		if json.Unmarshal(data, &args) != nil || args == nil {
			return
		}
		for i := range ss {
			if compiled[i].accepts(args) {
				if err := resolved[i].Validate(args); err != nil {
					t.Fatalf("schema %d: the fast check accepts %s, the general validator refuses it: %v", i, data, err)
				}
			}
		}
	})
}

// BenchmarkValidate compares the fast check with the general validator on
// the support workload's refund arguments.
func BenchmarkValidate(b *testing.B) {
	s := simpleSchemas(b)[0]
	r, err := s.Resolve(nil)
	if err != nil {
		b.Fatal(err)
	}
	c := compileSimple(s)
	args := map[string]any{"order_id": "A-1042", "amount_cents": 1250.0, "reason": "customer request"}
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !c.accepts(args) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("general", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := r.Validate(args); err != nil {
				b.Fatal(err)
			}
		}
	})
}
