package idempotency

import (
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/gowebpki/jcs"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// maxDirectDepth is how deep appendCanonical follows nested objects and
// arrays before it leaves the value to the general path (which also
// reports cycles).
const maxDirectDepth = 64

// canonicalJSON returns the RFC 8785 form of v. Values the way
// encoding/json decodes them (objects with ASCII keys, arrays, strings,
// float64, bool, nil) and Go integers are written directly; anything else
// takes the general path: json.Marshal, then jcs.Transform, whose output
// the direct path matches byte for byte (FuzzCanonicalDirect). The direct
// path is the one every tool call of a model's JSON arguments takes: the
// general one parses the document back and allocates for every string.
func canonicalJSON(toolName string, v map[string]any) ([]byte, error) {
	if b, ok := appendCanonical(make([]byte, 0, 128), v, 0); ok {
		return b, nil
	}
	return canonicalGeneral(toolName, v)
}

// canonicalGeneral is the general path of canonicalJSON.
func canonicalGeneral(toolName string, v map[string]any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, &tool.ArgumentError{Tool: toolName, Detail: "arguments are not JSON: " + tool.SanitizeString(err.Error())}
	}
	canon, err := jcs.Transform(raw)
	if err != nil {
		return nil, &tool.ArgumentError{Tool: toolName, Detail: "arguments cannot be canonicalised: " + tool.SanitizeString(err.Error())}
	}
	return canon, nil
}

// appendCanonical appends the RFC 8785 form of v to b, or reports false
// when v holds something it does not handle (the caller then uses the
// general path; what b holds then does not matter).
func appendCanonical(b []byte, v any, depth int) ([]byte, bool) {
	if depth > maxDirectDepth {
		return b, false
	}
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		return strconv.AppendBool(b, x), true
	case string:
		return appendCanonicalString(b, x), true
	case float64:
		return appendCanonicalNumber(b, x)
	case int:
		// json.Marshal writes the integer, RFC 8785 reads it back as the
		// nearest double: the same rounding as this conversion.
		return appendCanonicalNumber(b, float64(x))
	case int64:
		return appendCanonicalNumber(b, float64(x))
	case map[string]any:
		if x == nil {
			return append(b, "null"...), true
		}
		var small [8]string
		keys := small[:0]
		for k := range x {
			if !isASCII(k) {
				// RFC 8785 sorts by UTF-16 code units, which differs from
				// Go's byte order only beyond ASCII: leave those to jcs.
				return b, false
			}
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCanonicalString(b, k)
			b = append(b, ':')
			var ok bool
			if b, ok = appendCanonical(b, x[k], depth+1); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	case []any:
		if x == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendCanonical(b, e, depth+1); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	}
	return b, false
}

// appendCanonicalNumber appends f in ECMAScript form; NaN and infinities
// are left to the general path, which reports them.
func appendCanonicalNumber(b []byte, f float64) ([]byte, bool) {
	s, err := jcs.NumberToJSON(f)
	if err != nil {
		return b, false
	}
	return append(b, s...), true
}

// appendCanonicalString appends s as RFC 8785 writes a string: only '"',
// '\\' and control characters are escaped (the five with short forms
// short, the rest as lower-case \u00xx). A byte that is not UTF-8 becomes
// U+FFFD, as json.Marshal makes it before jcs reads it.
func appendCanonicalString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
			b = append(b, s[start:i]...)
			b = append(b, "\uFFFD"...)
			i++
			start = i
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			const hex = "0123456789abcdef"
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// isASCII reports whether s holds only ASCII bytes.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
