package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// countingLeaf is a value whose MarshalJSON counts its calls, failing when
// fail is set; past max calls it panics with errWalkTooLong, so that a walk
// that would take minutes stops at the bound.
type countingLeaf struct {
	n    *atomic.Int64
	max  int64
	fail bool
}

var errWalkTooLong = errors.New("jsonProblem walked past the bound")

func (c countingLeaf) MarshalJSON() ([]byte, error) {
	if c.n.Add(1) > c.max {
		panic(errWalkTooLong)
	}
	if c.fail {
		return nil, errors.New("bad")
	}
	return []byte("1"), nil
}

// problemWithin runs jsonProblem on v, failing the test when it calls a
// countingLeaf's MarshalJSON more than that leaf's max times.
func problemWithin(t *testing.T, name string, v any) (ptr string, err error) {
	t.Helper()
	defer func() {
		if r := recover(); r == errWalkTooLong {
			t.Fatalf("%s: jsonProblem walked the same members again and again (exponential in the depth): %v", name, r)
		} else if r != nil {
			panic(r)
		}
	}()
	return jsonProblem(v)
}

// Regression (found in review of this session's fix, twenty-fifth
// session): jsonProblem's search for the first failing member in sorted
// key order walked the keys sorted before the failing one again at every
// level, and a failing walk below walked again: a result whose maps share
// a member under several keys (a DAG), or that holds itself (a cycle, with
// several back references), cost about ((keys+1)/2)^depth walks, each
// ending in a json.Marshal of the cycle: a map with 4 references to itself
// took 20 s to 2 min, on the hot path of every tool call, while the
// invocation's lock and heartbeat kept the message from every other
// worker. The walk is now linear in the size of the value, counting a
// shared map once: these bounds count the MarshalJSON calls of a leaf,
// which the old walk made exponentially many times.
func TestJSONProblemLinearOnSharedValues(t *testing.T) {
	// A failing leaf shared under 16 keys at each of 10 levels: the old
	// walk called it hundreds of times; now once in each walk (the first,
	// which remembers nothing; the second; the sorted descent).
	t.Run("shared failing member", func(t *testing.T) {
		var calls atomic.Int64
		const depth = 10
		var v any = map[string]any{"x": countingLeaf{n: &calls, max: 1 << 20, fail: true}}
		for range depth {
			m := map[string]any{}
			for i := range 16 {
				m[fmt.Sprintf("k%02d", i)] = v
			}
			v = m
		}
		_, merr := json.Marshal(v)
		calls.Store(0)
		ptr, err := problemWithin(t, "shared failing member", v)
		if (err == nil) != (merr == nil) {
			t.Fatalf("jsonProblem err %v, json.Marshal err %v", err, merr)
		}
		if want := strings.Repeat("/k00", depth) + "/x"; ptr != want {
			t.Errorf("pointer %q, want %q (the first failing member in key order)", ptr, want)
		}
		if got := calls.Load(); got > 3 {
			t.Fatalf("jsonProblem called the failing MarshalJSON %d times on a %d-deep result, want at most 3", got, depth)
		}
	})

	// A map that holds itself under 4 keys, and a leaf that encodes: the
	// first walk meets the map at most maxJSONWalk+1 times, the second
	// finds the cycle at once.
	t.Run("self-reference", func(t *testing.T) {
		var calls atomic.Int64
		m := map[string]any{"g": countingLeaf{n: &calls, max: 4 * maxJSONWalk}}
		for _, k := range []string{"a", "b", "c", "d"} {
			m[k] = m
		}
		ptr, err := problemWithin(t, "self-reference", m)
		var ue *json.UnsupportedValueError
		if !errors.As(err, &ue) || ptr != "/a" || !strings.Contains(err.Error(), "encountered a cycle via map[string]interface {}") {
			t.Fatalf("jsonProblem = %q, %v; want /a and json.Marshal's cycle error", ptr, err)
		}
		if got := calls.Load(); got > maxJSONWalk+2 {
			t.Fatalf("jsonProblem called a leaf's MarshalJSON %d times, want at most %d", got, maxJSONWalk+2)
		}
	})

	// A chain whose every map refers back to its parent and to the root.
	t.Run("parent and root references", func(t *testing.T) {
		var calls atomic.Int64
		const n = 10
		root := map[string]any{}
		parent := root
		for range n {
			c := map[string]any{"parent": parent, "root": root, "g": countingLeaf{n: &calls, max: 4 * maxJSONWalk}}
			parent["child"] = c
			parent = c
		}
		ptr, err := problemWithin(t, "parent and root references", root)
		if want := strings.Repeat("/child", n) + "/parent"; err == nil || ptr != want {
			t.Fatalf("jsonProblem = %q, %v; want %s and a cycle error", ptr, err, want)
		}
		if got := calls.Load(); got > maxJSONWalk+2+2*n {
			t.Fatalf("jsonProblem called a leaf's MarshalJSON %d times, want at most %d", got, maxJSONWalk+2+2*n)
		}
	})

	// Maps shared under 16 keys at 10 levels that all encode (json.Marshal
	// would write 16^10 copies: not called): the first walk stops at its
	// budget, the second walks each map once.
	t.Run("shared members that encode", func(t *testing.T) {
		var calls atomic.Int64
		var v any = map[string]any{"x": countingLeaf{n: &calls, max: maxJSONTreeWalk + 1}}
		for range 10 {
			m := map[string]any{}
			for i := range 16 {
				m[fmt.Sprintf("k%02d", i)] = v
			}
			v = m
		}
		if ptr, err := problemWithin(t, "shared members that encode", v); err != nil {
			t.Fatalf("jsonProblem = %q, %v; want nil", ptr, err)
		}
	})
}

// Regression (found in review of this session's fix, twenty-fifth
// session): the pointer to the member that does not encode is the first in
// sorted key order on every run, also when maps are shared or hold
// themselves (the walks go in map order until one fails).
func TestJSONProblemPointerIsFirstInKeyOrder(t *testing.T) {
	bad := map[string]any{"ok": 1, "z": math.NaN()}
	a, b := map[string]any{"x": 1}, map[string]any{"y": 2}
	a["b"], b["a"] = b, a
	s := make([]any, 2)
	s[0], s[1] = "x", s
	cases := []struct {
		v    any
		want string
	}{
		{map[string]any{"d": bad, "c": bad, "b": 1, "a": []any{0, bad}}, "/a/1/z"},
		{map[string]any{"m": a, "n": b}, "/m/b/a"},
		{map[string]any{"s": s, "t": bad}, "/s/1"},
		{map[string]any{"rows": []map[string]any{{"ok": 1}, bad}}, "/rows/1/z"},
	}
	for _, c := range cases {
		_, merr := json.Marshal(c.v)
		for range 20 {
			ptr, err := jsonProblem(c.v)
			if err == nil || merr == nil || ptr != c.want {
				t.Fatalf("jsonProblem = %q, %v; want %q (json.Marshal: %v)", ptr, err, c.want, merr)
			}
		}
	}
}

// Regression (found in review of this session's fix, twenty-fifth
// session): a callback's state writes that do not encode are dropped, and
// the first in key order reported; the others stay, for the next event.
func TestDropUnencodableStateKeepsGoodWrites(t *testing.T) {
	cc := newCallbackContext("inv", "support", session.Key{}, nil, nil)
	if err := cc.dropUnencodableState(); err != nil {
		t.Fatalf("no writes: %v", err)
	}
	cc.SetState("a", 1)
	cc.SetState("b", map[string]any{"r": math.Inf(-1)})
	cc.SetState("c", math.NaN())
	cc.SetState("d", nil)
	err := cc.dropUnencodableState()
	var re *resultEncodeError
	var ue *json.UnsupportedValueError
	if !errors.As(err, &re) || re.Where != "state /b/r" || !errors.As(err, &ue) {
		t.Fatalf("err = %v, want a *resultEncodeError at state /b/r wrapping json's error", err)
	}
	var a session.Actions
	cc.takeDelta(&a)
	if _, err := json.Marshal(a.StateDelta); err != nil || len(a.StateDelta) != 2 || a.StateDelta["a"] != 1 {
		t.Fatalf("pending writes after the drop: %v (%v), want a and d", a.StateDelta, err)
	}
	if _, ok := a.StateDelta["d"]; !ok {
		t.Fatalf("pending writes after the drop: %v, want a and d", a.StateDelta)
	}
}
