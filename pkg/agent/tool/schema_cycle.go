package tool

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// sameInstanceCycle reports a chain of keywords that apply a schema to the
// very instance it is checking ($ref, allOf, anyOf, oneOf, not, if, then,
// else, dependentSchemas) and leads back to where it started, such as
// {"$ref": "#"}: validating with it never descends into the instance, so
// it recurses until the stack overflows, which no recover can catch. A
// recursive schema that descends ("properties": {"next": {"$ref": "#"}})
// is fine and not reported. Only local references ("#" and "#/...") are
// followed.
func sameInstanceCycle(s *jsonschema.Schema) error {
	raw, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode schema: %w", err)
	}
	var root any
	if err := json.Unmarshal(raw, &root); err != nil {
		return fmt.Errorf("decode schema: %w", err)
	}
	const (
		unvisited = iota
		onPath
		done
	)
	state := map[string]int{}
	var visit func(ptr string, node any, depth int) error
	visit = func(ptr string, node any, depth int) error {
		switch state[ptr] {
		case onPath:
			return fmt.Errorf("the schema at %q applies itself to the same value (a $ref cycle that never descends)", "#"+ptr)
		case done:
			return nil
		}
		if depth > 1000 {
			return fmt.Errorf("schema references nest deeper than 1000 at %q", "#"+ptr)
		}
		m, ok := node.(map[string]any)
		if !ok {
			state[ptr] = done
			return nil
		}
		state[ptr] = onPath
		next := func(p string, n any) error { return visit(p, n, depth+1) }
		if ref, ok := m["$ref"].(string); ok && (ref == "#" || strings.HasPrefix(ref, "#/")) {
			if target, ok := pointer(root, ref[1:]); ok {
				if err := next(ref[1:], target); err != nil {
					return err
				}
			}
		}
		for _, k := range []string{"allOf", "anyOf", "oneOf"} {
			if xs, ok := m[k].([]any); ok {
				for i, x := range xs {
					if err := next(ptr+"/"+k+"/"+strconv.Itoa(i), x); err != nil {
						return err
					}
				}
			}
		}
		for _, k := range []string{"not", "if", "then", "else"} {
			if x, ok := m[k]; ok {
				if err := next(ptr+"/"+k, x); err != nil {
					return err
				}
			}
		}
		if ds, ok := m["dependentSchemas"].(map[string]any); ok {
			for k, x := range ds {
				if err := next(ptr+"/dependentSchemas/"+escapePointer(k), x); err != nil {
					return err
				}
			}
		}
		state[ptr] = done
		return nil
	}
	return visit("", root, 0)
}

// pointer resolves a JSON pointer ("" or "/a/b") in v.
func pointer(v any, p string) (any, bool) {
	if p == "" {
		return v, true
	}
	for _, tok := range strings.Split(p[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
