package idempotency_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

func derive(t *testing.T, in idempotency.KeyInput) idempotency.Key {
	t.Helper()
	k, err := idempotency.DeriveKey(in)
	if err != nil {
		t.Fatalf("DeriveKey(%+v): %v", in, err)
	}
	return k
}

func TestKeyFormatAndHashInput(t *testing.T) {
	k := derive(t, idempotency.KeyInput{Agent: "support", InvocationID: "inv-1", Tool: "refund",
		Args: map[string]any{"order_id": "A-1042", "amount_cents": 1250}})
	if !strings.HasPrefix(k.String(), "idem:support:refund:") || len(k.Hash) != 64 {
		t.Fatalf("key %q", k)
	}
	// The documented hash input, computed independently.
	h := sha256.New()
	for _, f := range []string{"agentfleet.idempotency.v1", "inv-1", "refund", `{"amount_cents":1250,"order_id":"A-1042"}`} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write([]byte(f))
	}
	if want := hex.EncodeToString(h.Sum(nil)); k.Hash != want {
		t.Fatalf("hash %s, want %s", k.Hash, want)
	}
	p := derive(t, idempotency.KeyInput{Prefix: "prod-idem", Agent: "support", InvocationID: "inv-1", Tool: "refund",
		Args: map[string]any{"order_id": "A-1042", "amount_cents": 1250}})
	if p.String() != "prod-idem:support:refund:"+k.Hash {
		t.Fatalf("prefixed key %q", p)
	}
}

func TestKeyDistinguishesInputs(t *testing.T) {
	base := idempotency.KeyInput{Agent: "a", InvocationID: "inv", Tool: "t", Args: map[string]any{"x": 1}}
	k0 := derive(t, base)
	variants := []idempotency.KeyInput{
		{Agent: "a", InvocationID: "inv2", Tool: "t", Args: map[string]any{"x": 1}},
		{Agent: "a", InvocationID: "inv", Tool: "t2", Args: map[string]any{"x": 1}},
		{Agent: "a", InvocationID: "inv", Tool: "t", Args: map[string]any{"x": 2}},
		{Agent: "a", InvocationID: "inv", Tool: "t", Args: map[string]any{"x": "1"}},
		{Agent: "a", InvocationID: "inv", Tool: "t", Args: map[string]any{"x": 1, "y": nil}},
	}
	for _, v := range variants {
		if k := derive(t, v); k.Hash == k0.Hash {
			t.Errorf("%+v has the same hash as %+v", v, base)
		}
	}
	// Field boundaries cannot be shifted: ("ab","c") vs ("a","bc").
	a := derive(t, idempotency.KeyInput{Agent: "x", InvocationID: "ab", Tool: "c"})
	b := derive(t, idempotency.KeyInput{Agent: "x", InvocationID: "a", Tool: "bc"})
	if a.Hash == b.Hash {
		t.Error("length prefixes missing: shifted fields collide")
	}
}

func TestKeyNormalisesArguments(t *testing.T) {
	in := func(args map[string]any) idempotency.KeyInput {
		return idempotency.KeyInput{Agent: "a", InvocationID: "inv", Tool: "t", Args: args}
	}
	k1 := derive(t, in(map[string]any{"b": 1, "a": map[string]any{"z": 2.0, "y": []any{1.0, "<&>"}}}))
	k2 := derive(t, in(map[string]any{"a": map[string]any{"y": []any{int64(1), "<&>"}, "z": 2}, "b": 1.0}))
	if k1 != k2 {
		t.Fatalf("key order / number form changed the key: %s vs %s", k1, k2)
	}
	if derive(t, in(nil)) != derive(t, in(map[string]any{})) {
		t.Fatal("nil and empty args differ")
	}
}

func TestKeyFields(t *testing.T) {
	in := func(args map[string]any) idempotency.KeyInput {
		return idempotency.KeyInput{Agent: "a", InvocationID: "inv", Tool: "refund", Args: args, KeyFields: []string{"order_id", "amount_cents"}}
	}
	k1 := derive(t, in(map[string]any{"order_id": "A", "amount_cents": 5, "reason": "broken"}))
	k2 := derive(t, in(map[string]any{"order_id": "A", "amount_cents": 5, "reason": "It arrived broken."}))
	if k1 != k2 {
		t.Fatal("a non-key field changed the key")
	}
	if k3 := derive(t, in(map[string]any{"order_id": "A", "amount_cents": 6, "reason": "broken"})); k3 == k1 {
		t.Fatal("a key field did not change the key")
	}
	_, err := idempotency.DeriveKey(in(map[string]any{"order_id": "A", "reason": "x"}))
	var kfe *idempotency.KeyFieldError
	if !errors.As(err, &kfe) || kfe.Field != "amount_cents" || kfe.Tool != "refund" ||
		!errors.Is(err, idempotency.ErrMissingKeyField) || !errors.Is(err, tool.ErrInvalidArguments) {
		t.Fatalf("missing key field: %v", err)
	}
	// Present but null is present.
	if _, err := idempotency.DeriveKey(in(map[string]any{"order_id": "A", "amount_cents": nil})); err != nil {
		t.Fatalf("null key field: %v", err)
	}
}

func TestKeyRejectsBadInput(t *testing.T) {
	bad := []idempotency.KeyInput{
		{Agent: "", InvocationID: "i", Tool: "t"},
		{Agent: "a:b", InvocationID: "i", Tool: "t"},
		{Agent: "a", InvocationID: "i", Tool: "t t"},
		{Prefix: "x:y", Agent: "a", InvocationID: "i", Tool: "t"},
	}
	for _, in := range bad {
		if _, err := idempotency.DeriveKey(in); err == nil {
			t.Errorf("DeriveKey(%+v) accepted", in)
		}
	}
	if _, err := idempotency.DeriveKey(idempotency.KeyInput{Agent: "a", Tool: "t"}); !errors.Is(err, idempotency.ErrNoInvocationID) {
		t.Errorf("no invocation id: %v", err)
	}
	_, err := idempotency.DeriveKey(idempotency.KeyInput{Agent: "a", InvocationID: "i", Tool: "t", Args: map[string]any{"c": make(chan int)}})
	if !errors.Is(err, tool.ErrInvalidArguments) {
		t.Errorf("non-JSON args: %v", err)
	}
}

func TestArgsHashCoversAllFields(t *testing.T) {
	h1, _ := idempotency.ArgsHash("t", map[string]any{"a": 1, "reason": "x"})
	h2, _ := idempotency.ArgsHash("t", map[string]any{"reason": "x", "a": 1.0})
	h3, _ := idempotency.ArgsHash("t", map[string]any{"a": 1, "reason": "y"})
	if h1 != h2 || h1 == h3 || len(h1) != 64 {
		t.Fatalf("ArgsHash: %s %s %s", h1, h2, h3)
	}
}
