package producercli_test

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/producercli"
)

// TestDerivedIDsNeverChange pins derived ids: a batch file run again after
// an upgrade must get the ids it got before, or every line would run a
// second time (and an effectful tool, whose idempotency key includes the
// invocation id, would repeat its effect). "text" and a message with role
// user are one request; a message without a role is hashed as written
// (found in review, seventeenth session: unifying it with "text" would
// change the ids of such lines in files already run).
func TestDerivedIDsNeverChange(t *testing.T) {
	file := `{"agent":"support","user_id":"u1","session_id":"s1","text":"refund order A-1"}
{"agent":"support","user_id":"u1","session_id":"s1","message":{"role":"user","parts":[{"text":"refund order A-1"}]}}
{"agent":"support","user_id":"u1","session_id":"s1","message":{"parts":[{"text":"refund order A-1"}]}}
{ "session_id":"s1", "user_id":"u1", "agent":"support", "text":"refund order A-1" }
`
	lines, err := producercli.ParseBatch(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"b-925544b3ef500cb8f5749eec923fba4c",
		"b-925544b3ef500cb8f5749eec923fba4c",
		"b-564843873760e2bb2dbf8ed7a8e906f7",
		"b-925544b3ef500cb8f5749eec923fba4c",
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d", len(lines), len(want))
	}
	for i, l := range lines {
		if l.Err != nil {
			t.Fatalf("line %d: %v", l.No, l.Err)
		}
		if got := l.Request.InvocationID; got != want[i] {
			t.Errorf("line %d: derived id %s, want %s (a derived id must never change between versions)", l.No, got, want[i])
		}
	}
}
