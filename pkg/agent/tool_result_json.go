package agent

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// resultEncodeError is the error inside the *ToolError that ends an
// invocation whose tool call answered with a result (or recorded a state
// change) that encoding/json, the session stores' encoding, cannot encode:
// NaN or ±Inf, a channel, a func, a cycle, a MarshalJSON that fails. It is
// a bug in the tool (or in a callback that answered for it), not an outage
// of the session store, whose append would otherwise fail on it and be
// filed as the worker's own infrastructure (a *SessionError, put back and
// run again for ever). Unwrap gives encoding/json's error.
type resultEncodeError struct {
	// Where names the part that does not encode: "result" or "state", then
	// a JSON Pointer (RFC 6901) to the member, its keys sanitised
	// (tool.SanitizeString), e.g. "result /ratio".
	Where string
	Err   error // Err is encoding/json's error.
}

// Error implements error.
func (e *resultEncodeError) Error() string {
	return fmt.Sprintf("%s does not encode as JSON: %v", e.Where, e.Err)
}

// Unwrap returns encoding/json's error.
func (e *resultEncodeError) Unwrap() error { return e.Err }

// checkCallJSON returns a *resultEncodeError when a call's response or
// state delta would not encode as JSON, nil otherwise. Found in review,
// twenty-fifth session: a tool's {"ratio": NaN} failed the session
// append, and the worker Naked and redelivered it as an outage.
func checkCallJSON(response, stateDelta map[string]any) error {
	if ptr, err := jsonProblem(response, 0); err != nil {
		return &resultEncodeError{Where: strings.TrimSpace("result " + ptr), Err: err}
	}
	if len(stateDelta) == 0 {
		return nil
	}
	if ptr, err := jsonProblem(stateDelta, 0); err != nil {
		return &resultEncodeError{Where: "state " + ptr, Err: err}
	}
	return nil
}

// maxJSONWalk is the nesting jsonProblem walks itself; deeper values go to
// json.Marshal, which finds cycles.
const maxJSONWalk = 32

// jsonProblem returns encoding/json's error for v, and a JSON Pointer to
// the member that causes it, or nil when v encodes. The JSON shapes tools
// return (decoded JSON, tool.Func and idempotency results) are walked
// without allocating, by encoding/json's rules: only a NaN or infinite
// float, or a json.Number that is no number literal, fails among them.
// Any other value is given to json.Marshal itself: this runs once per tool
// call, on the load benchmark's hot path, and the store encodes the event
// anyway. Map members are searched in sorted key order once one fails, so
// the pointer is the same on every run.
func jsonProblem(v any, depth int) (string, error) {
	if depth > maxJSONWalk {
		return marshalProblem(v)
	}
	switch x := v.(type) {
	case nil, string, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, []string, map[string]string:
		return "", nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return marshalProblem(x)
		}
		return "", nil
	case float32:
		if f := float64(x); math.IsNaN(f) || math.IsInf(f, 0) {
			return marshalProblem(x)
		}
		return "", nil
	case json.Number:
		if x == "" || validNumber(string(x)) {
			return "", nil // json.Marshal writes "" as 0
		}
		return marshalProblem(x)
	case map[string]any:
		for k, vv := range x {
			if ptr, err := jsonProblem(vv, depth+1); err != nil {
				return firstMemberProblem(x, depth, k, ptr, err)
			}
		}
		return "", nil
	case []any:
		for i, vv := range x {
			if ptr, err := jsonProblem(vv, depth+1); err != nil {
				return fmt.Sprintf("/%d%s", i, ptr), err
			}
		}
		return "", nil
	case []map[string]any:
		for i, vv := range x {
			if ptr, err := jsonProblem(vv, depth+1); err != nil {
				return fmt.Sprintf("/%d%s", i, ptr), err
			}
		}
		return "", nil
	}
	return marshalProblem(v)
}

// firstMemberProblem returns the pointer and error of m's first member in
// sorted key order that does not encode, given one that does not (k, with
// its ptr and err). Only the keys before k are walked (again): a failing
// member is walked once, so nested failures (a map holding itself) cost no
// more than the first walk.
func firstMemberProblem(m map[string]any, depth int, k, ptr string, err error) (string, error) {
	var before []string
	for j := range m {
		if j < k {
			before = append(before, j)
		}
	}
	slices.Sort(before)
	for _, j := range before {
		if p, e := jsonProblem(m[j], depth+1); e != nil {
			return "/" + pointerToken(j) + p, e
		}
	}
	return "/" + pointerToken(k) + ptr, err
}

// pointerToken is a map key as a JSON Pointer reference token, sanitised
// first: the pointer goes into the error, and so into logs and dead
// letters.
func pointerToken(k string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(tool.SanitizeString(k))
}

// marshalProblem returns json.Marshal's error for v ("" as the pointer:
// encoding/json does not say which member failed).
func marshalProblem(v any) (string, error) {
	_, err := json.Marshal(v)
	return "", err
}

// validNumber reports whether s is a JSON number literal, as json.Marshal
// requires of a json.Number.
func validNumber(s string) bool {
	if s != "" && s[0] == '-' {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	switch {
	case s[0] == '0':
		s = s[1:]
	case '1' <= s[0] && s[0] <= '9':
		s = strings.TrimLeft(s[1:], "0123456789")
	default:
		return false
	}
	if len(s) >= 2 && s[0] == '.' && '0' <= s[1] && s[1] <= '9' {
		s = strings.TrimLeft(s[2:], "0123456789")
	}
	if len(s) >= 2 && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if s[0] == '+' || s[0] == '-' {
			s = s[1:]
		}
		if s == "" || s[0] < '0' || s[0] > '9' {
			return false
		}
		s = strings.TrimLeft(s, "0123456789")
	}
	return s == ""
}
