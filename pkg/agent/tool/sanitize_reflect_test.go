package tool_test

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// review2Masked hides its value in JSON, with a pointer-receiver method
// (as many types do: encoding/json calls it on every addressable value:
// fields of a struct reached through a pointer, slice elements).
type review2Masked struct{ Value string }

func (m *review2Masked) MarshalJSON() ([]byte, error) { return []byte(`"[masked]"`), nil }

type review2Detail struct {
	Token review2Masked `json:"token"`
}

func review2JSONForm(t *testing.T, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var d any
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestSanitizePointerToStructHidesFieldsAMarshalerHides: a struct in an
// error map is "[redacted]", never its raw fields.
//
// Regression (found in review of this session's fix, twenty-second
// session): the first version encoded a dereferenced copy of the struct,
// which skips a field's pointer-receiver MarshalJSON, and the value the
// type masks in its JSON form reached the model.
func TestSanitizePointerToStructHidesFieldsAMarshalerHides(t *testing.T) {
	m := tool.Error("card_declined", false, "")
	m["detail"] = &review2Detail{Token: review2Masked{Value: "tok-live-4242"}}

	got := mustJSON(t, tool.Sanitize(m))
	if strings.Contains(got, "tok-live-4242") || !strings.Contains(got, `"detail":"[redacted]"`) {
		t.Errorf("Sanitize = %s; want the struct redacted", got)
	}
}

// TestSanitizeSliceOfMarshalersIsRedacted: a slice whose elements choose
// their own JSON form is "[redacted]", never their raw fields.
//
// Regression (found in review of this session's fix, twenty-second
// session): each element was copied, which skips (*T).MarshalJSON.
func TestSanitizeSliceOfMarshalersIsRedacted(t *testing.T) {
	m := tool.Error("card_declined", false, "")
	m["tokens"] = []review2Masked{{Value: "tok-live-4242"}}

	got := mustJSON(t, tool.Sanitize(m))
	if strings.Contains(got, "tok-live-4242") || !strings.Contains(got, `"tokens":"[redacted]"`) {
		t.Errorf("Sanitize = %s; want the slice redacted", got)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

var review2Leaves atomic.Int64

type review2Leaf struct{}

func (review2Leaf) MarshalJSON() ([]byte, error) {
	review2Leaves.Add(1)
	return []byte(`1`), nil
}

// review2Node is a DAG: both children are the same node, so its JSON form
// doubles with every level although the value is small.
type review2Node struct {
	L, R *review2Node
	Leaf review2Leaf
}

// TestSanitizeStructWorkBoundedByDepthCap: a struct is redacted without
// encoding it.
//
// Regression (found in review of this session's fix, twenty-second
// session): the first version sent a struct through json.Marshal whole
// before the four-level cap applied; a shared sub-value made that
// exponential (depth 60 would not finish; a long linked list overflows the
// stack instead).
func TestSanitizeStructWorkBoundedByDepthCap(t *testing.T) {
	var n *review2Node
	for range 14 {
		n = &review2Node{L: n, R: n}
	}
	m := tool.Error("bad", false, "")
	m["tree"] = n
	review2Leaves.Store(0)
	_ = tool.Sanitize(m)
	if got := review2Leaves.Load(); got > 1000 {
		t.Errorf("Sanitize encoded %d leaves of a value it cuts at four levels (2^14 = whole JSON form)", got)
	}
}

// TestSanitizeZeroJSONNumberIsItsJSONForm: json.Number's zero value
// encodes as 0 (encoding/json: "Number's zero value is 0").
//
// Regression (found in review of this session's fix, twenty-second
// session): Sanitize turned it into the string "".
func TestSanitizeZeroJSONNumberIsItsJSONForm(t *testing.T) {
	m := tool.Error("bad", false, "")
	m["n"] = json.Number("")
	got := review2JSONForm(t, tool.Sanitize(m)).(map[string]any)["n"]
	if got != float64(0) {
		t.Errorf("Sanitize(json.Number(\"\")) = %#v, want 0 as json.Marshal writes it", got)
	}
}
