package gemini

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
)

// A function response read back from a store (decoded with UseNumber) may
// hold a json.Number that a float64 cannot hold (1e400, -1e400). The genai
// SDK turns the request into generic JSON values through float64 and
// silently sends null for such a number: the model saw null where the tool
// had answered (found in review, twenty-fifth session). The adapter sends
// it as its decimal text, a JSON string; every number a float64 holds,
// json.Number or not, goes as it is.

// sendableValue returns v with every json.Number that a float64 cannot
// hold (out of range; valid JSON) replaced by its text, and whether it
// replaced any. Only the maps and slices on the way to a replaced number
// are copied: a value without one is returned as it is, uncopied.
func sendableValue(v any) (any, bool) {
	switch x := v.(type) {
	case json.Number:
		if outOfRange(x) {
			return string(x), true
		}
	case map[string]any:
		var out map[string]any
		for k, e := range x {
			if ne, ok := sendableValue(e); ok {
				if out == nil {
					out = maps.Clone(x)
				}
				out[k] = ne
			}
		}
		if out != nil {
			return out, true
		}
	case []any:
		var out []any
		for i, e := range x {
			if ne, ok := sendableValue(e); ok {
				if out == nil {
					out = slices.Clone(x)
				}
				out[i] = ne
			}
		}
		if out != nil {
			return out, true
		}
	}
	return v, false
}

// outOfRange reports whether n is a valid JSON number that a float64
// cannot hold (strconv.ErrRange: beyond ±MaxFloat64; one too small rounds
// to zero and is held).
func outOfRange(n json.Number) bool {
	_, err := strconv.ParseFloat(string(n), 64)
	return errors.Is(err, strconv.ErrRange) && json.Valid([]byte(n))
}

// sendableResponse is a function response's map as sendableValue makes it.
func sendableResponse(resp map[string]any) map[string]any {
	if out, ok := sendableValue(resp); ok {
		return out.(map[string]any)
	}
	return resp
}
