package tool

import (
	"encoding/json"
	"math"

	"github.com/google/jsonschema-go/jsonschema"
)

// simpleSchema is a parameter schema of the shape jsonschema.For gives a
// struct of plain fields: an object whose properties are each a single
// type among string, integer, number and boolean, with a required list and
// perhaps additionalProperties false, and nothing else (descriptions and
// titles aside). Arguments that fit one are accepted without the general
// validator, which walks them by reflection; anything else, including
// every argument that does not fit, goes to the general validator, which
// also says what is wrong. FuzzSimpleSchemaAgrees holds that whatever the
// fast check accepts, the general validator accepts too.
type simpleSchema struct {
	types    map[string]string // property name → its type
	required []string
	closed   bool // additionalProperties: false
}

// compileSimple returns s as a simpleSchema, or nil when it has any other
// shape.
func compileSimple(s *jsonschema.Schema) *simpleSchema {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil {
		return nil
	}
	out := &simpleSchema{types: map[string]string{}}
	for k, v := range top {
		switch k {
		case "description", "title":
		case "type":
			var t string
			if json.Unmarshal(v, &t) != nil || t != "object" {
				return nil
			}
		case "required":
			if json.Unmarshal(v, &out.required) != nil {
				return nil
			}
		case "additionalProperties":
			if string(v) != "false" {
				return nil
			}
			out.closed = true
		case "properties":
			var props map[string]map[string]json.RawMessage
			if json.Unmarshal(v, &props) != nil {
				return nil
			}
			for name, p := range props {
				var t string
				for pk, pv := range p {
					switch pk {
					case "description", "title":
					case "type":
						if json.Unmarshal(pv, &t) != nil {
							return nil
						}
					default:
						return nil
					}
				}
				switch t {
				case "string", "integer", "number", "boolean":
					out.types[name] = t
				default:
					return nil
				}
			}
		default:
			return nil
		}
	}
	if _, ok := top["type"]; !ok {
		return nil
	}
	for _, r := range out.required {
		if _, ok := out.types[r]; !ok {
			return nil
		}
	}
	return out
}

// accepts reports whether args certainly fit the schema; false means "ask
// the general validator", not "invalid".
func (s *simpleSchema) accepts(args map[string]any) bool {
	for _, r := range s.required {
		if _, ok := args[r]; !ok {
			return false
		}
	}
	for k, v := range args {
		t, ok := s.types[k]
		if !ok {
			if s.closed {
				return false
			}
			continue
		}
		if !hasSimpleType(v, t) {
			return false
		}
	}
	return true
}

// hasSimpleType reports whether v, as encoding/json decodes a value (or a
// Go int), is of JSON Schema type t.
func hasSimpleType(v any, t string) bool {
	switch t {
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		switch x := v.(type) {
		case float64:
			return !math.IsNaN(x) && !math.IsInf(x, 0)
		case int, int64:
			return true
		}
	case "integer":
		switch x := v.(type) {
		case float64:
			return !math.IsInf(x, 0) && x == math.Trunc(x)
		case int, int64:
			return true
		}
	}
	return false
}
