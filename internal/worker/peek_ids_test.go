package worker

import "testing"

// README: bad input is dead-lettered as BAD_INPUT with "result `failed` when
// the id is readable". A request whose invocation id is a valid string but
// whose agent has the wrong JSON type has a readable id: encoding/json
// fills invocation_id and reports the type error only at the end, and
// peekIDs throws both away. The producer then gets no result (it waits
// until its own timeout) and the dead letter is filed under seq-<n>
// instead of the invocation id the operator searches for.
func TestPeekIDsReadsTheIDDespiteAWrongTypedAgent(t *testing.T) {
	data := []byte(`{"v":1,"invocation_id":"inv-7","agent":7,"user_id":"u","session_id":"s","message":{"role":"user","parts":[{"text":"hi"}]}}`)
	id, _ := peekIDs(data)
	if id != "inv-7" {
		t.Fatalf("peekIDs(%s) = id %q, want %q: its producer gets no failed result", data, id, "inv-7")
	}
}
