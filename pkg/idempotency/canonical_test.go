package idempotency

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// TestCanonicalDirectPath: the arguments a model sends (decoded JSON, and
// the Go integers tools and the simulated provider build) take the direct
// path, and its bytes are the general path's.
func TestCanonicalDirectPath(t *testing.T) {
	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"support refund", map[string]any{"order_id": "A-1042", "amount_cents": 1250, "reason": "customer request"},
			`{"amount_cents":1250,"order_id":"A-1042","reason":"customer request"}`},
		{"numbers", map[string]any{"a": 1.0, "b": 1e21, "c": math.Copysign(0, -1), "d": 0.000001, "e": 1e-7, "f": int64(1) << 60},
			`{"a":1,"b":1e+21,"c":0,"d":0.000001,"e":1e-7,"f":1152921504606847000}`},
		{"strings", map[string]any{"s": "<&>\u2028\x7f\"\\\b\f\n\r\t\x01\x1f é😀", "bad": "a\xffb"},
			`{"bad":"a` + "\uFFFD" + `b","s":"<&>` + "\u2028\x7f" + `\"\\\b\f\n\r\t\u0001\u001f é😀"}`},
		{"nested and null", map[string]any{"z": []any{1.0, map[string]any{"y": nil, "x": true}}, "a": map[string]any(nil), "b": []any(nil)},
			`{"a":null,"b":null,"z":[1,{"x":true,"y":null}]}`},
		{"nil args", nil, `{}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.args
			if v == nil {
				v = map[string]any{}
			}
			direct, ok := appendCanonical(nil, v, 0)
			if !ok {
				t.Fatalf("direct path refused %v", tc.args)
			}
			if string(direct) != tc.want {
				t.Fatalf("direct:\n got %s\nwant %s", direct, tc.want)
			}
			general, err := canonicalGeneral("t", v)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(direct, general) {
				t.Fatalf("direct %s, general %s", direct, general)
			}
			got, err := CanonicalArgs("t", tc.args, nil)
			if err != nil || string(got) != tc.want {
				t.Fatalf("CanonicalArgs = %s, %v", got, err)
			}
		})
	}
}

// TestCanonicalGeneralPath: what the direct path leaves alone still gets
// the general path's answer, errors included.
func TestCanonicalGeneralPath(t *testing.T) {
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	for _, tc := range []struct {
		name    string
		args    map[string]any
		want    string
		wantErr bool
	}{
		{"non-ASCII keys sort by UTF-16", map[string]any{"\U0001F600": 1, "\uFB01": 2}, `{"😀":1,"ﬁ":2}`, false},
		{"json.Number", map[string]any{"n": json.Number("1.0")}, `{"n":1}`, false},
		{"float32", map[string]any{"f": float32(0.1)}, `{"f":0.1}`, false},
		{"typed map", map[string]any{"m": map[string]string{"b": "1", "a": "2"}}, `{"m":{"a":"2","b":"1"}}`, false},
		{"NaN", map[string]any{"n": math.NaN()}, "", true},
		{"infinity", map[string]any{"n": math.Inf(1)}, "", true},
		{"cycle", cyclic, "", true},
		{"channel", map[string]any{"c": make(chan int)}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CanonicalArgs("t", tc.args, nil)
			if tc.wantErr {
				var ae *tool.ArgumentError
				if !errors.As(err, &ae) {
					t.Fatalf("err = %v, want a *tool.ArgumentError", err)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("CanonicalArgs = %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}

// FuzzCanonicalDirect: wherever the direct path answers, it answers what
// json.Marshal + jcs.Transform (the general path) does, for any JSON value
// and any string bytes, keys included.
func FuzzCanonicalDirect(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a":1}`, `{"order_id":"A-1","amount_cents":1250,"reason":"x"}`,
		`{"n":1.0,"m":1e2,"o":-0,"p":0.1,"q":12345678901234567890,"r":5e-324,"s":1.7976931348623157e308}`,
		`{"nested":{"z":[1,2,{"y":null,"x":true}],"a":"\u00e9\ud83d\ude00"}}`,
		`{"s":"<&>\u2028\u0000\u001f\u007f"}`, `[1,2]`, `"str"`, `{"a":{"a":{"a":{"a":{}}}}}`,
		"\"\xff\xfe\xed\xa0\x80\"",
	} {
		f.Add([]byte(s), int64(1))
	}
	f.Fuzz(func(t *testing.T, data []byte, n int64) {
		var v any
		_ = json.Unmarshal(data, &v) // v stays nil when data is not JSON
		args := map[string]any{"v": v, "raw": string(data), "n": n, "i": int(n)}
		if len(data) > 0 && len(data) < 64 {
			args[string(data)] = string(data) // a key of any bytes
		}
		direct, ok := appendCanonical(nil, args, 0)
		general, err := canonicalGeneral("t", args)
		if !ok {
			return
		}
		if err != nil {
			t.Fatalf("direct path answered %s where the general one failed: %v", direct, err)
		}
		if !bytes.Equal(direct, general) {
			t.Fatalf("direct and general paths differ for %q:\n direct  %s\n general %s", data, direct, general)
		}
	})
}

// BenchmarkCanonicalArgs compares the direct path with the general one
// (json.Marshal + jcs.Transform) on the support workload's refund
// arguments, as a model's JSON decodes them.
func BenchmarkCanonicalArgs(b *testing.B) {
	args := map[string]any{"order_id": "A-1042", "amount_cents": 1250.0, "reason": "customer request"}
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := canonicalJSON("refund_order", args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("general", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := canonicalGeneral("refund_order", args); err != nil {
				b.Fatal(err)
			}
		}
	})
}
