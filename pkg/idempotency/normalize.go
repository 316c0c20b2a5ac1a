package idempotency

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// normalizedResult returns what decoding res's JSON gives (decodeResult: a
// fresh map, every number a json.Number holding the digits json.Marshal
// writes, nil maps and slices as nil), without the encoding and decoding,
// when res holds only the values JSON decodes into, float64s, Go integers
// and json.Numbers. It reports false for anything else (invalid UTF-8, NaN,
// other types), and the caller decodes the JSON instead
// (FuzzNormalizedResult holds the two equal).
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
		// As json.Marshal writes it (its shortest exact form); NaN and
		// infinities do not encode.
		b, err := json.Marshal(x)
		return json.Number(b), err == nil
	case int:
		// Every digit: an id above 2^53 used to go through float64.
		return json.Number(strconv.Itoa(x)), true
	case int64:
		return json.Number(strconv.FormatInt(x, 10)), true
	case json.Number:
		// What tool.ToMap gives a typed tool's numbers: kept as written
		// when it is a literal of JSON's grammar (json.Marshal refuses
		// anything else, but writes "" as 0: left to the general path).
		if x == "" || (x[0] != '-' && !isDigit(x[0])) || !isDigit(x[len(x)-1]) || !json.Valid([]byte(x)) {
			return nil, false
		}
		return x, true
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
