package idempotency

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

// roundTrip is what normalizedResult stands for: the result's JSON,
// decoded.
func roundTrip(t *testing.T, res map[string]any) (map[string]any, bool) {
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, false
	}
	m, err := decodeResult(raw)
	if err != nil {
		// Encodes but does not decode: the wrapper cannot keep it either.
		t.Logf("decode %s: %v", raw, err)
		return nil, false
	}
	return m, true
}

func TestNormalizedResult(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  map[string]any
		ok   bool
	}{
		{"support refund", map[string]any{"status": "ok", "order_id": "A-1", "refunded_cents": 1250}, true},
		{"nested", map[string]any{"a": []any{1, int64(2), 2.5, nil, true, map[string]any{"b": "c"}}, "m": map[string]any(nil), "s": []any(nil)}, true},
		{"nil", nil, true},
		{"invalid UTF-8", map[string]any{"s": "a\xffb"}, false},
		{"NaN", map[string]any{"n": math.NaN()}, false},
		{"struct", map[string]any{"t": struct{ A int }{1}}, false},
		// tool.ToMap's numbers since the twenty-second session.
		{"json.Number", map[string]any{"n": json.Number("1250"), "f": json.Number("-2.5e-3")}, true},
		{"json.Number not a literal", map[string]any{"n": json.Number("0x10")}, false},
		// Kept as written since the twenty-fourth session (it used to
		// go through float64, which cannot hold it).
		{"json.Number beyond float64", map[string]any{"n": json.Number("1e400")}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := normalizedResult(tc.res)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			want, _ := roundTrip(t, tc.res)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("normalized %#v, decoded %#v", got, want)
			}
			if len(tc.res) > 0 && reflect.ValueOf(got).UnsafePointer() == reflect.ValueOf(tc.res).UnsafePointer() {
				t.Fatal("the caller gets the tool's own map, not a copy")
			}
		})
	}
}

// FuzzNormalizedResult: wherever normalizedResult answers, it answers what
// encoding and decoding the result does.
func FuzzNormalizedResult(f *testing.F) {
	for _, s := range []string{`{}`, `{"status":"ok","refunded_cents":1250}`, `{"a":[1,2.5,null,true,{"b":"c"}],"e":1e308,"f":-0}`, "\"\xff\""} {
		f.Add([]byte(s), int64(7))
	}
	for _, s := range []string{`9007199254740993`, `-0.5e-3`, `1 `, `01`, `1e400`, `0x10`} {
		f.Add([]byte(s), int64(1))
	}
	f.Fuzz(func(t *testing.T, data []byte, n int64) {
		var v any
		_ = json.Unmarshal(data, &v)
		res := map[string]any{"v": v, "raw": string(data), "n": n, "i": int(n)}
		if len(data) < 64 {
			res[string(data)] = v
			// A typed tool's numbers, as tool.ToMap gives them.
			res["num"] = json.Number(data)
		}
		got, ok := normalizedResult(res)
		want, encodes := roundTrip(t, res)
		if !ok {
			return
		}
		if !encodes {
			t.Fatalf("normalized %v where the result does not encode", res)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("normalized %#v, decoded %#v", got, want)
		}
	})
}
