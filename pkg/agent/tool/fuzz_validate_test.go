package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// refundArgs is the shape of the demo's refund_order arguments.
type refundArgs struct {
	OrderID     string   `json:"order_id" jsonschema:"Order id, e.g. A-1042"`
	AmountCents int      `json:"amount_cents" jsonschema:"Amount to refund, in cents"`
	Reason      string   `json:"reason,omitempty"`
	Items       []string `json:"items,omitempty"`
	Express     *bool    `json:"express,omitempty"`
}

// handSchema is a hand-written declaration using the keywords tool
// authors reach for.
var handSchema = &jsonschema.Schema{
	Type:     "object",
	Required: []string{"query"},
	Properties: map[string]*jsonschema.Schema{
		"query":  {Type: "string", MinLength: jsonschema.Ptr(1), MaxLength: jsonschema.Ptr(64), Pattern: `^[A-Za-z0-9 -]+$`},
		"limit":  {Type: "integer", Minimum: jsonschema.Ptr(1.0), Maximum: jsonschema.Ptr(50.0)},
		"sort":   {Enum: []any{"asc", "desc", nil}},
		"filter": {Type: "object", AdditionalProperties: &jsonschema.Schema{Type: "string"}},
		"tags":   {Type: "array", Items: &jsonschema.Schema{Type: "string"}, MaxItems: jsonschema.Ptr(5), UniqueItems: true},
		"when":   {AnyOf: []*jsonschema.Schema{{Type: "string"}, {Type: "number", MultipleOf: jsonschema.Ptr(0.5)}}},
	},
	AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
}

// checkDetail: what the model is told about its arguments is one short,
// sanitised line.
func checkDetail(t *testing.T, err error) {
	t.Helper()
	var ae *tool.ArgumentError
	if !errors.As(err, &ae) || !errors.Is(err, tool.ErrInvalidArguments) {
		t.Fatalf("error %T %v is not an *ArgumentError", err, err)
	}
	d := ae.Detail
	if strings.ContainsAny(d, "\r\n") || !utf8.ValidString(d) || utf8.RuneCountInString(d) > tool.MaxErrorStringLen {
		t.Fatalf("detail %q is not one short valid line", d)
	}
}

func argsOf(data []byte) map[string]any {
	var args map[string]any
	if json.Unmarshal(data, &args) != nil {
		return nil
	}
	return args
}

// FuzzValidateArgs: function-call arguments from a model (any JSON object,
// as the provider adapters decode it) never panic the validator or the
// typed tool's decoding. The validator answers nil or an *ArgumentError
// with a safe detail, and says the same on a second call; arguments it accepts reach the
// typed function with their values, or are refused as an *ArgumentError.
func FuzzValidateArgs(f *testing.F) {
	for _, s := range []string{
		`{"order_id":"A-1042","amount_cents":1299}`, `{"order_id":"A-1","amount_cents":1299.0,"reason":"late"}`,
		`{"order_id":"A-1","amount_cents":1e300}`, `{"order_id":"A-1","amount_cents":-0}`,
		`{"order_id":5,"amount_cents":"12"}`, `{"order_id":"A-1","amount_cents":1,"admin":true}`,
		`{"order_id":"A-1","amount_cents":9223372036854775807,"items":["a",null],"express":null}`,
		`{"query":"shoes","limit":50,"sort":null,"filter":{"a":"b"},"tags":["x","x"],"when":1.5}`,
		`{"query":"","limit":0.5,"when":{"a":1}}`, `{"query":"a\nb goroutine 1 [running]"}`, `{}`, `null`, `[1]`,
	} {
		f.Add([]byte(s))
	}
	var got refundArgs
	fn := tool.MustFunc("refund_order", "Refund", func(_ context.Context, a refundArgs) (map[string]any, error) {
		got = a
		return tool.OK(nil), nil
	})
	hand := &model.ToolDeclaration{Name: "search", Parameters: handSchema}
	var v tool.Validator
	for _, d := range []*model.ToolDeclaration{fn.Declaration(), hand} {
		if err := v.Check(d); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		args := argsOf(data)
		for _, d := range []*model.ToolDeclaration{fn.Declaration(), hand} {
			err := v.Validate(d, args)
			err2 := v.Validate(d, args)
			// (The detail may name another of several violations each
			// time: jsonschema-go walks maps in random order.)
			if (err == nil) != (err2 == nil) {
				t.Fatalf("two validations differ: %v / %v", err, err2)
			}
			if err != nil {
				checkDetail(t, err)
				continue
			}
			if d != fn.Declaration() {
				continue
			}
			got = refundArgs{}
			out, rerr := fn.Run(context.Background(), args)
			if rerr != nil {
				checkDetail(t, rerr)
				continue
			}
			if out["status"] != "ok" {
				t.Fatalf("Run = %v", out)
			}
			if id, _ := args["order_id"].(string); got.OrderID != id {
				t.Fatalf("order_id %q reached the tool as %q", id, got.OrderID)
			}
			if n, ok := args["amount_cents"].(float64); ok && float64(got.AmountCents) != n {
				t.Fatalf("amount_cents %v reached the tool as %d", n, got.AmountCents)
			}
		}
	})
}

// FuzzSchemaInput: a parameter schema of any JSON (a tool author's, an
// imported OpenAPI or MCP one) never panics the Validator: Check says nil
// or *SchemaError, and Validate agrees with it (a *SchemaError exactly when
// Check gave one, else nil or an *ArgumentError with a safe detail), the
// same on the cached second call.
func FuzzSchemaInput(f *testing.F) {
	hs, _ := json.Marshal(handSchema)
	f.Add(hs, []byte(`{"query":"x","limit":3}`))
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}`,
		`{"type":"object","properties":{"a":{"pattern":"(?!x)"}}}`,
		`{"$ref":"#/$defs/a","$defs":{"a":{"type":"object","properties":{"n":{"$ref":"#/$defs/a"}}}}}`,
		`{"$ref":"#/nope"}`, `{"type":["object","null"],"minProperties":1}`, `true`, `false`, `{}`,
		`{"oneOf":[{"required":["a"]},{"required":["b"]}],"dependentRequired":{"a":["c"]}}`,
		`{"if":{"required":["a"]},"then":{"required":["b"]},"else":{"maxProperties":0}}`,
		`{"properties":{"a":{"const":{"x":[1,2]}}},"patternProperties":{"^x":{"type":"null"}}}`,
		`{"type":"object","properties":{"d":{"format":"date-time","multipleOf":0}}}`,
	} {
		f.Add([]byte(s), []byte(`{"a":1,"b":"x","n":{"n":{}}}`))
	}
	f.Fuzz(func(t *testing.T, schemaJSON, argsJSON []byte) {
		var s jsonschema.Schema
		if err := json.Unmarshal(schemaJSON, &s); err != nil {
			return
		}
		decl := &model.ToolDeclaration{Name: "t", Parameters: &s}
		var v tool.Validator
		cerr := v.Check(decl)
		var se *tool.SchemaError
		if cerr != nil && !errors.As(cerr, &se) {
			t.Fatalf("Check = %T %v, want nil or *SchemaError", cerr, cerr)
		}
		args := argsOf(argsJSON)
		for range 2 {
			err := v.Validate(decl, args)
			switch {
			case cerr != nil:
				if !errors.As(err, &se) {
					t.Fatalf("Check said %v; Validate = %v", cerr, err)
				}
			case err != nil:
				if errors.As(err, &se) {
					t.Fatalf("Check said nil; Validate = %v", err)
				}
				checkDetail(t, err)
			}
		}
		// What the Validator checks is what the model is sent: the schema
		// encodes (the adapters marshal it into the request).
		if cerr == nil {
			if _, err := json.Marshal(decl); err != nil {
				t.Fatalf("a resolvable schema does not encode: %v", err)
			}
		}
	})
}
