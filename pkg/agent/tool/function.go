package tool

import (
	"bytes"
	"context"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

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
// is an error matching ErrInvalidName. Args may not use the json tag option
// ",string" (at any depth): the inferred schema would declare the field's
// own type while the decoder wants it quoted, so no call could succeed.
func NewFunc[Args, Result any](name, description string, fn func(ctx context.Context, args Args) (Result, error)) (*Func[Args, Result], error) {
	if name == "" || fn == nil {
		return nil, fmt.Errorf("tool: NewFunc needs a name and a function")
	}
	if err := CheckName(name); err != nil {
		return nil, fmt.Errorf("tool: NewFunc: %w", err)
	}
	if err := checkNoStringOption(reflect.TypeFor[Args](), "", map[reflect.Type]bool{}); err != nil {
		return nil, fmt.Errorf("tool %s: %w", name, err)
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
		// The argument that fails on its own names the error: Go's own
		// text holds Go type names (an embedded struct's, an
		// UnmarshalJSON method's).
		failing := failingArgument(args, func(raw []byte) error {
			var one Args
			d := json.NewDecoder(bytes.NewReader(raw))
			d.DisallowUnknownFields()
			return d.Decode(&one)
		})
		return nil, &ArgumentError{Tool: f.name, Detail: decodeErrorDetail(err, failing)}
	}
	res, err := f.fn(ctx, a)
	if err != nil {
		return nil, err
	}
	return ToMap(res)
}

// ToMap converts a tool result to a map: a map[string]any is returned as
// is; anything else must marshal to a JSON object (a nil pointer, which
// marshals to null, is an error). Numbers are kept as json.Number, so an
// integer beyond 2^53 keeps its digits here, in the idempotency wrapper's
// stored result and in a resumed invocation's stored events
// (session.DecodeJSON); the Gemini SDK reads numbers as float64, so an id
// a model must repeat exactly still belongs in a string.
func ToMap(v any) (map[string]any, error) {
	if m, ok := v.(map[string]any); ok {
		return m, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("tool: encode result: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("tool: result is not a JSON object: %w", err)
	}
	if m == nil {
		return nil, errors.New("tool: result is not a JSON object: null")
	}
	return m, nil
}

// checkNoStringOption returns an error for a field of t (a struct, or
// reached from one through pointers, slices, arrays and maps) whose json
// tag has the ",string" option. path is the argument path of t; seen
// stops recursive types.
func checkNoStringOption(t reflect.Type, path string, seen map[reflect.Type]bool) error {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return nil
	}
	seen[t] = true
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() && !sf.Anonymous {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = sf.Name
		}
		if path != "" {
			name = path + "." + name
		}
		for o := range strings.SplitSeq(opts, ",") {
			if o == "string" {
				return fmt.Errorf("argument %s: the json option \",string\" is not supported (the schema would not say the value is quoted)", name)
			}
		}
		sub := name
		if sf.Anonymous && (tag == "" || strings.HasPrefix(tag, ",")) {
			sub = path // an embedded struct's fields are the outer struct's
		}
		if err := checkNoStringOption(sf.Type, sub, seen); err != nil {
			return err
		}
	}
	return nil
}

// failingArgument returns the first argument (in name order) that decode
// refuses on its own, or "" when none does.
func failingArgument(args map[string]any, decode func(raw []byte) error) string {
	for _, k := range slices.Sorted(maps.Keys(args)) {
		raw, err := json.Marshal(map[string]any{k: args[k]})
		if err != nil || decode(raw) != nil {
			return k
		}
	}
	return ""
}

// decodeErrorDetail says what is wrong with arguments encoding/json could
// not decode, naming the argument (failing, when known) but no Go type,
// field, method or package: an UnmarshalJSON method's own text is not
// passed on (found in review of this session's fix, twenty-second
// session).
func decodeErrorDetail(err error, failing string) string {
	arg := "an argument"
	if failing != "" {
		arg = "argument " + failing
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		// A nested argument's path, when te.Field is one under failing
		// (an embedded struct's field has its Go type name in front).
		if failing != "" && strings.HasPrefix(te.Field, failing+".") {
			arg = "argument " + te.Field
		}
		return SanitizeString(arg + ": want " + jsonKindOf(te.Type))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return "arguments are not JSON"
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return SanitizeString("unknown argument " + f)
	}
	return SanitizeString(arg + ": invalid value")
}

// jsonKindOf describes what JSON value decodes into t, with the range of a
// numeric type.
func jsonKindOf(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(reflect.TypeFor[encoding.TextUnmarshaler]()) {
		return "a string"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := t.Bits()
		return fmt.Sprintf("an integer in range [%d, %d]", int64(-1)<<(bits-1), int64(uint64(1)<<(bits-1)-1))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return fmt.Sprintf("an integer in range [0, %d]", uint64(1)<<(t.Bits()-1)<<1-1)
	case reflect.Float32:
		return "a number in range [-3.4e38, 3.4e38]"
	case reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another type"
}
