package agent

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"testing"
	"time"
)

// jsonProblem must agree with json.Marshal, the session stores' encoding:
// it fails exactly when json.Marshal does (found in review, twenty-fifth
// session).
func TestJSONProblemAgreesWithMarshal(t *testing.T) {
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	deep := any("leaf")
	for range 3 * maxJSONWalk {
		deep = map[string]any{"d": []any{deep}}
	}
	values := []any{
		nil, "s", true, 1, int64(-3), uint8(7), 1.5, float32(2), math.NaN(), math.Inf(1), float32(math.Inf(-1)),
		[]string{"a"}, map[string]string{"a": "b"}, []map[string]any{{"x": math.NaN()}},
		map[string]any{"a": []any{1, map[string]any{"b": math.NaN()}}}, make(chan int), func() {},
		time.Unix(0, 0), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), struct{ C chan int }{}, cyclic, deep,
		map[int]any{1: math.NaN()}, []byte("x"), complex(1, 2),
	}
	// Self-references and shared members (found in review of this
	// session's fix, twenty-fifth session).
	self4 := map[string]any{"g": 1}
	for _, k := range []string{"a", "b", "c", "d"} {
		self4[k] = self4
	}
	ma, mb := map[string]any{"x": 1}, map[string]any{"y": 2}
	ma["b"], mb["a"] = mb, ma
	loop := make([]any, 1)
	loop[0] = loop
	sub := make([]any, 2)
	sub[0], sub[1] = sub[:1], "x"
	rows := []map[string]any{{"x": 1}}
	rows[0]["rows"] = rows
	viaStruct := map[string]any{}
	viaStruct["s"] = struct{ M map[string]any }{viaStruct}
	deepCycle := map[string]any{}
	tail := deepCycle
	for range 2 * maxJSONWalk {
		next := map[string]any{"n": 1}
		tail["d"] = []any{next}
		tail = next
	}
	tail["top"] = deepCycle
	shared := func(leaf any) any {
		v := leaf
		for range 6 {
			v = map[string]any{"a": v, "b": []any{v, v}, "c": v}
		}
		return v
	}
	big := map[string]any{}
	for i := range maxJSONTreeWalk + 10 {
		big[fmt.Sprint(i)] = i
	}
	bigBad := maps.Clone(big)
	bigBad["5000"] = math.NaN()
	values = append(values, self4, ma, loop, sub, sub[:1], rows, viaStruct, deepCycle,
		shared("leaf"), shared(math.Inf(1)), shared(map[string]any{}), big, bigBad, map[string]any{"e": []any{}, "m": map[string]any{}})
	for _, n := range []string{"", "0", "-0", "1", "-", "01", "1.", ".5", "1.5", "1e5", "1E+5", "1e-05", "1e", "1e+",
		"12.5e3", "-12.5E-3", " 1", "1 ", "+1", "0x10", "Inf", "NaN", "1_0", "1.5.5", "1e5e5", "00", "-01.0"} {
		values = append(values, json.Number(n))
	}
	for i, v := range values {
		_, want := json.Marshal(v)
		_, got := jsonProblem(v)
		if (got == nil) != (want == nil) {
			// Not %v: some values hold themselves.
			t.Errorf("values[%d] (%T): jsonProblem = %v, json.Marshal says %v", i, v, got, want)
		}
	}
}

func FuzzJSONProblemNumber(f *testing.F) {
	for _, s := range []string{"0", "-1.5e3", "1.", "01", "1e+"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, want := json.Marshal(json.Number(s))
		if _, got := jsonProblem(json.Number(s)); (got == nil) != (want == nil) {
			t.Errorf("jsonProblem(json.Number(%q)) = %v, json.Marshal says %v", s, got, want)
		}
	})
}
