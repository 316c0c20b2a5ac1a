package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// Func is a Tool built from a typed Go function by NewFunc. The argument
// schema is inferred from Args: exported fields with json tags; a field is
// required unless tagged omitempty; `jsonschema:"..."` tags give
// descriptions.
type Func[Args, Result any] struct {
	name, description string
	decl              *model.ToolDeclaration
	fn                func(ctx context.Context, args Args) (Result, error)
	// fields are the argument names a struct Args declares, exactly:
	// encoding/json would also take "ORDER_ID" or "order_ıd" for
	// "order_id" (it folds case), so Run checks names first. nil when
	// Args is not a struct.
	fields map[string]bool
}

// NewFunc builds a Tool from fn. Result may be map[string]any or any type
// that marshals to a JSON object. A name the providers refuse (CheckName)
// is an error matching ErrInvalidName.
func NewFunc[Args, Result any](name, description string, fn func(ctx context.Context, args Args) (Result, error)) (*Func[Args, Result], error) {
	if name == "" || fn == nil {
		return nil, fmt.Errorf("tool: NewFunc needs a name and a function")
	}
	if err := CheckName(name); err != nil {
		return nil, fmt.Errorf("tool: NewFunc: %w", err)
	}
	schema, err := jsonschema.For[Args](nil)
	if err != nil {
		return nil, fmt.Errorf("tool %s: infer argument schema: %w", name, err)
	}
	var fields map[string]bool
	if reflect.TypeFor[Args]().Kind() == reflect.Struct {
		fields = make(map[string]bool, len(schema.Properties))
		for k := range schema.Properties {
			fields[k] = true
		}
	}
	return &Func[Args, Result]{
		name:        name,
		description: description,
		decl:        &model.ToolDeclaration{Name: name, Description: description, Parameters: schema},
		fn:          fn,
		fields:      fields,
	}, nil
}

// MustFunc is NewFunc that panics on error, for package-level tool values.
func MustFunc[Args, Result any](name, description string, fn func(ctx context.Context, args Args) (Result, error)) *Func[Args, Result] {
	t, err := NewFunc(name, description, fn)
	if err != nil {
		panic(err)
	}
	return t
}

// Name implements Tool.
func (f *Func[Args, Result]) Name() string { return f.name }

// Description implements Tool.
func (f *Func[Args, Result]) Description() string { return f.description }

// Declaration implements Tool.
func (f *Func[Args, Result]) Declaration() *model.ToolDeclaration { return f.decl }

// Run decodes args into Args (unknown fields, and names that differ from a
// declared one only in case, are rejected as an *ArgumentError), calls the
// function and encodes its result as a map.
func (f *Func[Args, Result]) Run(ctx context.Context, args map[string]any) (map[string]any, error) {
	if f.fields != nil {
		for k := range args {
			if !f.fields[k] {
				return nil, &ArgumentError{Tool: f.name, Detail: SanitizeString(fmt.Sprintf("unknown argument %q", k))}
			}
		}
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, &ArgumentError{Tool: f.name, Detail: "arguments are not JSON"}
	}
	var a Args
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, &ArgumentError{Tool: f.name, Detail: SanitizeString(err.Error())}
	}
	res, err := f.fn(ctx, a)
	if err != nil {
		return nil, err
	}
	return ToMap(res)
}

// ToMap converts a tool result to a map: a map[string]any is returned as
// is; anything else must marshal to a JSON object.
func ToMap(v any) (map[string]any, error) {
	if m, ok := v.(map[string]any); ok {
		return m, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("tool: encode result: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("tool: result is not a JSON object: %w", err)
	}
	return m, nil
}
