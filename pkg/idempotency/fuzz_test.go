package idempotency_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// FuzzKey: arbitrary JSON arguments never make key derivation panic, and the
// same logical arguments written differently (key order, whitespace, 1.0 vs
// 1) give the same key.
func FuzzKey(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a":1}`, `{"order_id":"A-1","amount_cents":1250,"reason":"x"}`,
		`{"n":1.0,"m":1e2,"o":-0,"p":0.1,"q":12345678901234567890}`,
		`{"nested":{"z":[1,2,{"y":null,"x":true}],"a":"\u00e9\ud83d\ude00"}}`,
		`{"s":"<&>\u2028"}`, `[1,2]`, `"str"`, `{"a":{"a":{"a":{"a":{}}}}}`,
	} {
		f.Add([]byte(s), uint64(1))
	}
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		var args map[string]any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber() // keep the number text ("1.0") so the canonicaliser sees it
		if err := dec.Decode(&args); err != nil {
			return
		}
		in := idempotency.KeyInput{Agent: "a", InvocationID: "inv", Tool: "t", Args: args}
		k1, err := idempotency.DeriveKey(in)
		if err != nil {
			return // rejected (e.g. too deep, out-of-range number), not a panic
		}
		// The same arguments re-encoded: shuffled key order, indented,
		// numbers re-written (1 → 1.0, 100 → 1e2 form via float64).
		r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		var buf bytes.Buffer
		writeShuffled(&buf, toFloat(args), r)
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, buf.Bytes(), "", "\t "); err != nil {
			t.Fatalf("re-encoded JSON invalid: %v\n%s", err, buf.Bytes())
		}
		var args2 map[string]any
		d2 := json.NewDecoder(&pretty)
		d2.UseNumber()
		if err := d2.Decode(&args2); err != nil {
			t.Fatalf("decode re-encoded: %v", err)
		}
		in.Args = args2
		k2, err := idempotency.DeriveKey(in)
		if err != nil {
			t.Fatalf("re-encoded args rejected: %v", err)
		}
		if k1 != k2 {
			t.Fatalf("same logical args, different keys:\n%s\n%s", data, pretty.Bytes())
		}
	})
}

// toFloat turns json.Number into float64 (so 1 becomes 1.0 when written
// with %v-style formatting below).
func toFloat(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return x
		}
		return f
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, vv := range x {
			out[k] = toFloat(vv)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, vv := range x {
			out[i] = toFloat(vv)
		}
		return out
	}
	return v
}

// writeShuffled writes v as JSON with object members in random order and
// integral floats written with a ".0" fraction.
func writeShuffled(buf *bytes.Buffer, v any, r *rand.Rand) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		buf.WriteString("{ ")
		for i, k := range keys {
			if i > 0 {
				buf.WriteString(" , ")
			}
			kb, _ := json.Marshal(k)
			buf.Write(kb)
			buf.WriteString(" : ")
			writeShuffled(buf, x[k], r)
		}
		buf.WriteString(" }")
	case []any:
		buf.WriteString("[")
		for i, e := range x {
			if i > 0 {
				buf.WriteString(",\n")
			}
			writeShuffled(buf, e, r)
		}
		buf.WriteString("]")
	case float64:
		b, _ := json.Marshal(x)
		if !bytes.ContainsAny(b, ".eE") {
			b = append(b, ".0"...)
		}
		buf.Write(b)
	default:
		b, _ := json.Marshal(x)
		buf.Write(b)
	}
}
