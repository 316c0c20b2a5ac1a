package tool_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// FuzzSanitizeStringIdempotent: sanitising a sanitised string changes
// nothing (the idempotency wrapper stores error maps the loop sanitises
// again; a resumed invocation sends the stored ones back).
func FuzzSanitizeStringIdempotent(f *testing.F) {
	for _, s := range []string{
		"", "order not found", "dial tcp 10.0.0.7:5432: refused", "see https://x.example/y?q=1 now",
		"lookup orders-db on 10.0.0.2:53: no such host", "db.internal is down", strings.Repeat("é", 300),
		strings.Repeat("x ", 99) + "db.internalx", " \t[redacted]:80 ",
		"SELECT\tid FROM t", "->redis-primary:6379", "\u212aelvin \u017felect",
		"Cannot connect to host vllm-backend:8000 ssl:default", "host host a:1", "Host:  b:2",
		"x509: certificate is valid for a.io, b.io, not c.io", strings.Repeat("x", 150) + " x509: certificate is valid for a.acme.io, b.acme.io, not c.acme.io",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		once := tool.SanitizeString(s)
		if twice := tool.SanitizeString(once); twice != once {
			t.Fatalf("SanitizeString not idempotent:\n in    %q\n once  %q\n twice %q", s, once, twice)
		}
	})
}

// FuzzSanitizeMap: an error map of any shape (a tool's result, decoded as
// JSON) is sanitised without touching the input: every string and key of
// the copy is one capped line, nesting is bounded, no two keys become one
// (an entry would be lost, and which one depends on map order), the copy
// is an error map that a second Sanitize leaves as it is, and two calls
// agree. A map that is not an error map comes back as it is.
func FuzzSanitizeMap(f *testing.F) {
	for _, s := range []string{
		`{"status":"error","reason":"db","hint":"dial tcp 10.0.0.7:5432: refused\nstack","retryable":true}`,
		`{"status":"ok","note":"line1\nline2"}`, `{"reason":"x"}`, `{"status":"error\n","a":{"b":{"c":{"d":{"e":{"f":"g"}}}}}}`,
		`{"status":"error","list":["a\nb",1.5,null,true,["goroutine 1 [running]"]]}`,

		`{"status":"not_found","hint":"` + strings.Repeat("<é>", 120) + `"}`, `{"status":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m map[string]any
		if json.Unmarshal(data, &m) != nil || m == nil {
			return
		}
		var before map[string]any
		_ = json.Unmarshal(data, &before)
		out := tool.Sanitize(m)
		if !reflect.DeepEqual(m, before) {
			t.Fatal("Sanitize modified its input")
		}
		if !tool.IsErrorMap(m) {
			if !reflect.DeepEqual(out, m) {
				t.Fatalf("a map that is not an error map was changed: %v -> %v", m, out)
			}
			return
		}
		checkSanitized(t, out, 0)
		checkNoKeyCollision(t, m, 0)
		if again := tool.Sanitize(m); !reflect.DeepEqual(again, out) {
			t.Fatalf("two sanitisations of %s differ:\n%v\n%v", data, out, again)
		}
		if !tool.IsErrorMap(out) {
			t.Fatalf("the error map %s was sanitised into one that is not: %v", data, out)
		}
		if twice := tool.Sanitize(out); !reflect.DeepEqual(twice, out) {
			t.Fatalf("Sanitize not idempotent on %s:\n%v\n%v", data, out, twice)
		}
	})
}

func checkSanitized(t *testing.T, v any, depth int) {
	t.Helper()
	if depth > 6 {
		t.Fatalf("nesting deeper than the cap: %v", v)
	}
	line := func(s string) {
		if strings.ContainsAny(s, "\r\n") || !utf8.ValidString(s) || utf8.RuneCountInString(s) > tool.MaxErrorStringLen {
			t.Fatalf("string %q is not one capped line", s)
		}
	}
	switch x := v.(type) {
	case string:
		line(x)
	case map[string]any:
		for k, vv := range x {
			line(k)
			checkSanitized(t, vv, depth+1)
		}
	case []any:
		for _, vv := range x {
			checkSanitized(t, vv, depth+1)
		}
	}
}

// checkNoKeyCollision fails when two keys of a map Sanitize rewrites (the
// levels it descends into) sanitise to the same key.
func checkNoKeyCollision(t *testing.T, v any, depth int) {
	t.Helper()
	if depth > 4 {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		// The sanitised copy of this level has as many entries.
		if out, ok := tool.Sanitize(map[string]any{"status": "error", "m": x})["m"].(map[string]any); ok && len(out) != len(x) {
			t.Fatalf("a map of %d keys was sanitised into %d: an entry is lost (%v -> %v)", len(x), len(out), x, out)
		}
		for _, vv := range x {
			checkNoKeyCollision(t, vv, depth+1)
		}
	case []any:
		for _, vv := range x {
			checkNoKeyCollision(t, vv, depth+1)
		}
	}
}
