package envelope_test

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

const nestedCostHead = `{"v":1,"invocation_id":"inv-1","agent":"support","user_id":"u1","session_id":"s1",`

// Regression (found in review of this session's fix, twenty-second
// session): unknown members inside a part are ignored by encoding/json and by the
// contract, as unknown top-level members are (TestUnknownMembersDoNotCostAnAllocationEach).
// Before 97160f5 such a request cost ~20 allocations; CheckJSON now keeps
// every name of an object past smallObject in a map[string]struct{},
// allocating a string per member: ~100,000 allocations on the worker's hot
// path for one request within DefaultMaxSize.
func TestUnknownPartMembersDoNotCostAnAllocationEach(t *testing.T) {
	var buf bytes.Buffer
	buf.WriteString(nestedCostHead + `"message":{"role":"user","parts":[{"text":"x"`)
	for i := 0; buf.Len() < envelope.DefaultMaxSize-20; i++ {
		buf.WriteString(`,"u` + strconv.Itoa(i) + `":0`)
	}
	buf.WriteString("}]}}")
	data := buf.Bytes()
	if _, err := envelope.DecodeRequest(data, 0); err != nil {
		t.Fatalf("refused: %v", err)
	}
	allocs := testing.AllocsPerRun(3, func() { _, _ = envelope.DecodeRequest(data, 0) })
	if allocs > 10000 {
		t.Fatalf("DecodeRequest of a %d-byte request with unknown members in a part made %.0f allocations (want < 10000; ~20 before 97160f5)", len(data), allocs)
	}
}

// Regression (found in review of this session's fix, twenty-second
// session): one member name in the message that is not snake_case ("X",
// an unknown member, ignored by everyone) makes CheckJSON decode the whole
// message again into any and walk it with reflection; the first version
// also computed a struct's fields anew for every object: a request of many
// (empty) parts cost ~5x the allocations of the same request without the
// "X" (1.7M vs 344k). The second decode is the decided price (at most
// about twice a plain request's), paid only when some name is not
// snake_case.
func TestOneUpperCaseNameDoesNotMultiplyTheCost(t *testing.T) {
	build := func(msgHead string) []byte {
		var buf bytes.Buffer
		buf.WriteString(nestedCostHead + `"message":{` + msgHead + `"role":"user","parts":[{"text":"x"}`)
		for buf.Len() < envelope.DefaultMaxSize-20 {
			buf.WriteString(`,{}`)
		}
		buf.WriteString("]}}")
		return buf.Bytes()
	}
	plain, withX := build(""), build(`"X":0,`)
	for _, d := range [][]byte{plain, withX} {
		if _, err := envelope.DecodeRequest(d, 0); err != nil {
			t.Fatalf("refused: %v", err)
		}
	}
	a := testing.AllocsPerRun(2, func() { _, _ = envelope.DecodeRequest(plain, 0) })
	b := testing.AllocsPerRun(2, func() { _, _ = envelope.DecodeRequest(withX, 0) })
	if b > 2.2*a {
		t.Fatalf("an unknown member \"X\" in the message raised DecodeRequest's allocations from %.0f to %.0f (%.1fx)", a, b, b/a)
	}
}
