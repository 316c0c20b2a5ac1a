package tool

import (
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// sameInstanceCycle reports a chain of keywords that apply a schema to the
// very instance it is checking ($ref, $dynamicRef, allOf, anyOf, oneOf,
// not, if, then, else, dependentSchemas) and leads back to where it
// started, such as {"$ref": "#"}: validating with it never descends into
// the instance, so it recurses until the stack overflows, which no recover
// can catch. Every subschema is a starting point (a cycle under
// "properties" overflows as soon as that property is validated). A
// recursive schema that descends ("properties": {"next": {"$ref": "#"}})
// is fine and not reported. References are followed as JSON pointers
// ("#", "#/...", percent-decoded), anchors ("#name": $anchor and
// $dynamicAnchor) and $id values; one that resolves to none of these is
// left to the resolver.
func sameInstanceCycle(s *jsonschema.Schema) error {
	raw, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode schema: %w", err)
	}
	var root any
	if err := json.Unmarshal(raw, &root); err != nil {
		return fmt.Errorf("decode schema: %w", err)
	}
	// Every object in the document by its pointer, and the anchors and
	// ids naming them.
	nodes := map[string]map[string]any{}
	anchors := map[string]string{}
	ids := map[string]string{}
	var collect func(ptr string, v any, depth int)
	collect = func(ptr string, v any, depth int) {
		if depth > 1000 {
			return
		}
		switch x := v.(type) {
		case map[string]any:
			nodes[ptr] = x
			for _, k := range []string{"$anchor", "$dynamicAnchor"} {
				if a, ok := x[k].(string); ok {
					anchors[a] = ptr
				}
			}
			if id, ok := x["$id"].(string); ok {
				ids[strings.TrimSuffix(id, "#")] = ptr
			}
			for k, c := range x {
				collect(ptr+"/"+escapePointer(k), c, depth+1)
			}
		case []any:
			for i, c := range x {
				collect(ptr+"/"+strconv.Itoa(i), c, depth+1)
			}
		}
	}
	collect("", root, 0)
	resolve := func(ref string) (string, bool) {
		base, frag, hasFrag := strings.Cut(ref, "#")
		start := ""
		if base != "" {
			p, ok := ids[base]
			if !ok {
				return "", false
			}
			start = p
		}
		switch {
		case !hasFrag || frag == "":
			return start, true
		case strings.HasPrefix(frag, "/"):
			if dec, err := url.PathUnescape(frag); err == nil {
				frag = dec
			}
			p := start + frag
			if _, ok := nodes[p]; ok {
				return p, true
			}
			// A pointer through characters the collector escaped.
			if _, ok := pointer(root, p); ok {
				for np := range nodes {
					if unescapePointer(np) == unescapePointer(p) {
						return np, true
					}
				}
			}
			return "", false
		default:
			p, ok := anchors[frag]
			return p, ok
		}
	}
	const (
		unvisited = iota
		onPath
		done
	)
	state := map[string]int{}
	var visit func(ptr string, depth int) error
	visit = func(ptr string, depth int) error {
		switch state[ptr] {
		case onPath:
			return fmt.Errorf("the schema at %q applies itself to the same value (a reference cycle that never descends)", "#"+ptr)
		case done:
			return nil
		}
		m, ok := nodes[ptr]
		if !ok || depth > 1000 {
			state[ptr] = done
			return nil
		}
		state[ptr] = onPath
		var next []string
		for _, k := range []string{"$ref", "$dynamicRef"} {
			if ref, ok := m[k].(string); ok {
				if p, ok := resolve(ref); ok {
					next = append(next, p)
				}
			}
		}
		for _, k := range []string{"allOf", "anyOf", "oneOf"} {
			if xs, ok := m[k].([]any); ok {
				for i := range xs {
					next = append(next, ptr+"/"+k+"/"+strconv.Itoa(i))
				}
			}
		}
		for _, k := range []string{"not", "if", "then", "else"} {
			if _, ok := m[k]; ok {
				next = append(next, ptr+"/"+k)
			}
		}
		if ds, ok := m["dependentSchemas"].(map[string]any); ok {
			for k := range ds {
				next = append(next, ptr+"/dependentSchemas/"+escapePointer(k))
			}
		}
		for _, p := range next {
			if err := visit(p, depth+1); err != nil {
				return err
			}
		}
		state[ptr] = done
		return nil
	}
	ptrs := make([]string, 0, len(nodes))
	for p := range nodes {
		ptrs = append(ptrs, p)
	}
	sort.Strings(ptrs) // the same schema reports the same cycle
	for _, p := range ptrs {
		if err := visit(p, 0); err != nil {
			return err
		}
	}
	return nil
}

func unescapePointer(p string) string {
	return strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
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
