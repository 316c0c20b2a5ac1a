package agent

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unsafe"

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
	if ptr, err := jsonProblem(response); err != nil {
		return &resultEncodeError{Where: strings.TrimSpace("result " + ptr), Err: err}
	}
	if len(stateDelta) == 0 {
		return nil
	}
	if ptr, err := jsonProblem(stateDelta); err != nil {
		return &resultEncodeError{Where: "state " + ptr, Err: err}
	}
	return nil
}

// maxJSONTreeWalk and maxJSONWalk bound jsonProblem's first walk, which
// remembers nothing: at most maxJSONTreeWalk members, maxJSONWalk deep. A
// value past either (a large result, maps shared under many keys, a cycle) is
// walked again by one that remembers every map and slice it met, so that
// no part of a value is walked twice.
const (
	maxJSONTreeWalk = 1 << 14
	maxJSONWalk     = 32
)

// jsonProblem returns encoding/json's error for v, and a JSON Pointer to
// the member that causes it, or nil when v encodes. The JSON shapes tools
// return (decoded JSON, tool.Func and idempotency results) are walked by
// encoding/json's rules: only a NaN or infinite float, a json.Number that
// is no number literal, or a map or slice that holds itself (a cycle, as
// json.Marshal reports it) fails among them. Any other value is given to
// json.Marshal itself: this runs once per tool call, on the load
// benchmark's hot path, and the store encodes the event anyway. A result
// of ordinary size is walked once, without allocating; once one fails, the
// failing member is searched in sorted key order, so the pointer is the
// same on every run.
//
// The cost is linear in the size of v, counting a map or slice held in
// several places (or in itself) once: a second walk remembers, by
// identity, each map and slice it checked, and those on its path (met
// again there, one is a cycle). Until the review of this session's fix
// (twenty-fifth session) a failing member was walked again at every
// level, exponential in the depth of a value that shares it.
func jsonProblem(v any) (string, error) {
	w := jsonWalk{budget: maxJSONTreeWalk}
	if w.encodes(v, 0) {
		return "", nil
	}
	w.seen = map[jsonNode]nodeState{}
	return w.first(v)
}

// jsonWalk is one jsonProblem call's state.
type jsonWalk struct {
	budget int // members the first walk may still visit
	// seen is the second walk's memory (nil in the first walk): each map
	// and slice met, with what is known of it.
	seen map[jsonNode]nodeState
}

// jsonNode is a map's or a slice's identity, as json.Marshal tells them
// apart to find cycles: a map by its pointer, a slice by its data and
// length.
type jsonNode struct {
	p unsafe.Pointer
	n int // n is a slice's length, -1 for a map.
}

// nodeState is what a jsonWalk knows of a map or a slice.
type nodeState uint8

const (
	nodeUnknown   nodeState = iota
	nodeOnPath              // being walked: met again, it is a cycle
	nodeGood                // it encodes
	nodeBad                 // it does not encode
	nodeOnDescent           // first descends through it (it does not encode)
)

// nodeOf returns v's identity when v is a map or slice the walks go into,
// and not empty (an empty one encodes, and may share its data pointer).
func nodeOf(v any) (jsonNode, bool) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) > 0 {
			return jsonNode{p: reflect.ValueOf(x).UnsafePointer(), n: -1}, true
		}
	case []any:
		if len(x) > 0 {
			return jsonNode{p: unsafe.Pointer(unsafe.SliceData(x)), n: len(x)}, true
		}
	case []map[string]any:
		if len(x) > 0 {
			return jsonNode{p: unsafe.Pointer(unsafe.SliceData(x)), n: len(x)}, true
		}
	}
	return jsonNode{}, false
}

// encodes reports whether v encodes as JSON, stopping at the first member
// (in map order) that does not. In the first walk (seen nil) it also
// reports false once the walk is past its budget or maxJSONWalk deep; in
// the second it walks each map and slice once, recording the outcome.
func (w *jsonWalk) encodes(v any, depth int) bool {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			return true
		}
		if known, ok := w.enter(v, len(x), depth); known {
			return ok
		}
		for _, vv := range x {
			if !w.encodes(vv, depth+1) {
				return w.leave(v, false)
			}
		}
		return w.leave(v, true)
	case []any:
		return sliceEncodes(w, v, x, depth)
	case []map[string]any:
		return sliceEncodes(w, v, x, depth)
	}
	return leafProblem(v) == nil
}

// sliceEncodes is encodes of v, the slice x.
func sliceEncodes[E any](w *jsonWalk, v any, x []E, depth int) bool {
	if len(x) == 0 {
		return true
	}
	if known, ok := w.enter(v, len(x), depth); known {
		return ok
	}
	for _, vv := range x {
		if !w.encodes(vv, depth+1) {
			return w.leave(v, false)
		}
	}
	return w.leave(v, true)
}

// enter starts walking a map or slice v of n members. It returns known
// true, with v's outcome, when nothing is left to walk: in the first walk
// when it is past its budget or depth (ok false: the second walk decides),
// in the second when v was met before (a cycle when v is on the path).
// Otherwise v is on the path until leave.
func (w *jsonWalk) enter(v any, n, depth int) (known, ok bool) {
	if w.seen == nil {
		w.budget -= n
		return w.budget < 0 || depth > maxJSONWalk, false
	}
	id, _ := nodeOf(v)
	switch w.seen[id] {
	case nodeGood:
		return true, true
	case nodeOnPath, nodeBad, nodeOnDescent:
		return true, false
	}
	w.seen[id] = nodeOnPath
	return false, false
}

// leave records v's outcome ok (second walk) and returns ok.
func (w *jsonWalk) leave(v any, ok bool) bool {
	if w.seen != nil {
		id, _ := nodeOf(v)
		if ok {
			w.seen[id] = nodeGood
		} else {
			w.seen[id] = nodeBad
		}
	}
	return ok
}

// first returns the pointer to the first member of v, in sorted key (or
// index) order, that does not encode, and encoding/json's error for it;
// "", nil when v encodes. It descends only into members the second walk
// finds failing, and walks each map and slice once: the maps and slices
// it descends through are marked, so that a member leading back to one is
// reported as the cycle it is.
func (w *jsonWalk) first(v any) (string, error) {
	if id, ok := nodeOf(v); ok {
		w.seen[id] = nodeOnDescent
	}
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if ptr, err := w.member(x[k]); err != nil {
				return "/" + pointerToken(k) + ptr, err
			}
		}
		return "", nil
	case []any:
		for i, vv := range x {
			if ptr, err := w.member(vv); err != nil {
				return "/" + strconv.Itoa(i) + ptr, err
			}
		}
		return "", nil
	case []map[string]any:
		for i, vv := range x {
			if ptr, err := w.member(vv); err != nil {
				return "/" + strconv.Itoa(i) + ptr, err
			}
		}
		return "", nil
	}
	return "", leafProblem(v)
}

// member is first for a member of a map or slice first descends through.
func (w *jsonWalk) member(v any) (string, error) {
	if id, ok := nodeOf(v); ok {
		if w.seen[id] == nodeOnDescent {
			return "", cycleError(v)
		}
		if w.encodes(v, 0) {
			return "", nil
		}
	}
	return w.first(v)
}

// leafProblem returns json.Marshal's error for v, which is no map or slice
// the walks go into, or nil when v encodes: the JSON scalars are checked
// by encoding/json's rules without calling it.
func leafProblem(v any) error {
	switch x := v.(type) {
	case nil, string, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, []string, map[string]string,
		map[string]any, []any, []map[string]any: // empty ones
		return nil
	case float64:
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			return nil
		}
	case float32:
		if f := float64(x); !math.IsNaN(f) && !math.IsInf(f, 0) {
			return nil
		}
	case json.Number:
		if x == "" || validNumber(string(x)) {
			return nil // json.Marshal writes "" as 0
		}
	}
	_, err := json.Marshal(v)
	return err
}

// cycleError is json.Marshal's error for a map or slice v that holds
// itself.
func cycleError(v any) error {
	rv := reflect.ValueOf(v)
	return &json.UnsupportedValueError{Value: rv, Str: "encountered a cycle via " + rv.Type().String()}
}

// pointerToken is a map key as a JSON Pointer reference token, sanitised
// first: the pointer goes into the error, and so into logs and dead
// letters.
func pointerToken(k string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(tool.SanitizeString(k))
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
