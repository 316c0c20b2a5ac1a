package idempotency_test

import (
	"encoding/json"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// pinnedKey is the key of pinnedArgs in invocation inv-1, as this version
// and every earlier one since the v1 hash derived it. Changing it strands
// every record in every store.
const pinnedKey = "idem:support:refund:bb6a6574ca55ec584f45dfc9da3c46a240690401b54527d76f50eed1926ecc01"

// pinnedCanonical is pinnedArgs in RFC 8785 form: an integer above 2^53
// is canonicalised as the double nearest to it, as it always was.
const pinnedCanonical = `{"amount_cents":1250,"lines":[{"qty":2,"ratio":0.5}],"order_id":"A-1042","ref":9007199254740992}`

// Regression (left open in the twenty-second session, fixed in the
// twenty-fourth): stored results and events now decode numbers as
// json.Number instead of float64; an idempotency key must stay byte for
// byte what it was for the same arguments, whatever form their numbers
// take (float64 from a model adapter or a stored call, Go integers,
// json.Number from stored JSON or a typed value), or a replay would miss
// the record its first run wrote and run the refund again.
func TestKeyPinnedAcrossNumberForms(t *testing.T) {
	const text = `{"order_id":"A-1042","amount_cents":1250,"lines":[{"qty":2,"ratio":0.5}],"ref":9007199254740993}`
	var plain map[string]any // as json.Unmarshal and the model adapters give them: float64
	if err := json.Unmarshal([]byte(text), &plain); err != nil {
		t.Fatal(err)
	}
	var stored map[string]any // as the stores decode now: json.Number
	if err := session.DecodeJSON([]byte(text), &stored); err != nil {
		t.Fatal(err)
	}
	if _, ok := stored["amount_cents"].(json.Number); !ok {
		t.Fatalf("session.DecodeJSON gave amount_cents as %T, want json.Number", stored["amount_cents"])
	}
	var call session.Event // a pending call a resumed invocation runs again
	if err := session.DecodeEvent([]byte(`{"content":{"role":"model","parts":[{"function_call":{"name":"refund","args":`+text+`}}]}}`), &call); err != nil {
		t.Fatal(err)
	}
	forms := map[string]map[string]any{
		"float64 (json.Unmarshal)":    plain,
		"json.Number (DecodeJSON)":    stored,
		"a stored call (DecodeEvent)": call.FunctionCalls()[0].Args,
		"Go integers": {"order_id": "A-1042", "amount_cents": 1250, "lines": []any{map[string]any{"qty": int64(2), "ratio": 0.5}},
			"ref": int64(9007199254740993)},
		"json.Number written otherwise": {"order_id": "A-1042", "amount_cents": json.Number("1.25e3"),
			"lines": []any{map[string]any{"qty": json.Number("2.0"), "ratio": json.Number("5e-1")}}, "ref": json.Number("9007199254740993")},
	}
	for name, args := range forms {
		canon, err := idempotency.CanonicalArgs("refund", args, nil)
		if err != nil {
			t.Fatalf("%s: CanonicalArgs: %v", name, err)
		}
		if string(canon) != pinnedCanonical {
			t.Errorf("%s: canonical arguments %s, want %s", name, canon, pinnedCanonical)
		}
		k, err := idempotency.DeriveKey(idempotency.KeyInput{Agent: "support", InvocationID: "inv-1", Tool: "refund", Args: args})
		if err != nil {
			t.Fatalf("%s: DeriveKey: %v", name, err)
		}
		if k.String() != pinnedKey {
			t.Errorf("%s: key %s, want %s", name, k, pinnedKey)
		}
	}
}
