package idempotency

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// normalizedResult returns what decoding res's JSON gives (a fresh map,
// integers as float64, nil maps and slices as nil), without the encoding
// and decoding, when res holds only the values JSON decodes into, Go
// integers and json.Numbers. It reports false for anything else (invalid UTF-8, NaN, other
// types), and the caller decodes the JSON instead (FuzzNormalizedResult
// holds the two equal).
func normalizedResult(res map[string]any) (map[string]any, bool) {
	if res == nil {
		return nil, true
	}
	v, ok := normalizeJSON(res, 0)
	if !ok {
		return nil, false
	}
	return v.(map[string]any), true
}

// normalizeJSON is normalizedResult for one value.
func normalizeJSON(v any, depth int) (any, bool) {
	if depth > maxDirectDepth {
		return nil, false
	}
	switch x := v.(type) {
	case nil, bool:
		return x, true
	case string:
		return x, utf8.ValidString(x)
	case float64:
		// Encoded in its shortest exact form, decoded to the same value;
		// NaN and infinities do not encode.
		return x, x == x && x-x == 0
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case json.Number:
		// What tool.ToMap gives a typed tool's numbers: decoded as the
		// JSON decoder would (a literal of JSON's grammar, in range).
		if x == "" || (x[0] != '-' && !isDigit(x[0])) || !isDigit(x[len(x)-1]) || !json.Valid([]byte(x)) {
			return nil, false
		}
		f, err := strconv.ParseFloat(string(x), 64)
		return f, err == nil
	case map[string]any:
		if x == nil {
			return nil, true
		}
		m := make(map[string]any, len(x))
		for k, e := range x {
			if !utf8.ValidString(k) {
				return nil, false
			}
			n, ok := normalizeJSON(e, depth+1)
			if !ok {
				return nil, false
			}
			m[k] = n
		}
		return m, true
	case []any:
		if x == nil {
			return nil, true
		}
		s := make([]any, len(x))
		for i, e := range x {
			n, ok := normalizeJSON(e, depth+1)
			if !ok {
				return nil, false
			}
			s[i] = n
		}
		return s, true
	}
	return nil, false
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
