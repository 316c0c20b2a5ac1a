package producercli_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/producercli"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

func TestParseBatch(t *testing.T) {
	in := strings.Join([]string{
		`# a comment`,
		`{"agent":"support","user_id":"u1","session_id":"s1","text":"hello"}`,
		``,
		`{ "session_id":"s1", "user_id":"u1", "agent":"support", "message":{"role":"user","parts":[{"text":"hello"}]} }`,
		`{"invocation_id":"given-1","agent":"support","user_id":"u1","session_id":"s1","text":"hi"}`,
		`{"agent":"support","user_id":"u1","session_id":"s1","text":"other"}`,
		`not json`,
		`{"agent":"sup.port","user_id":"u1","session_id":"s1","text":"x"}`,
		`{"agent":"support","user_id":"u1","session_id":"s1","text":"x"} {"again":1}`,
		`{"agent":"support","user_id":"u1","session_id":"s1","text":"m","metadata":{"b":"2","a":"1"}}`,
		`{"metadata":{"a":"1","b":"2"},"agent":"support","user_id":"u1","session_id":"s1","text":"m"}`,
	}, "\n")
	lines, err := producercli.ParseBatch(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 9 {
		t.Fatalf("%d lines, want 9", len(lines))
	}
	byNo := map[int]producercli.Line{}
	for _, l := range lines {
		byNo[l.No] = l
	}
	a, b := byNo[2], byNo[4]
	if a.Err != nil || b.Err != nil || !a.DerivedID || a.Request.InvocationID != b.Request.InvocationID ||
		!strings.HasPrefix(a.Request.InvocationID, "b-") || !envelope.ValidID(a.Request.InvocationID) {
		t.Fatalf("same request, different form: %+v / %+v", a, b)
	}
	if byNo[5].Request.InvocationID != "given-1" || byNo[5].DerivedID {
		t.Fatalf("explicit id not kept: %+v", byNo[5])
	}
	if byNo[6].Request.InvocationID == a.Request.InvocationID {
		t.Fatal("different text, same id")
	}
	if byNo[10].Request.InvocationID != byNo[11].Request.InvocationID {
		t.Fatal("metadata key order changed the id")
	}
	for _, no := range []int{7, 8, 9} {
		var ie *envelope.InvalidError
		if !errors.As(byNo[no].Err, &ie) {
			t.Errorf("line %d: err %v, want *envelope.InvalidError", no, byNo[no].Err)
		}
	}
	// Re-parsing yields the same ids (a rerun).
	again, _ := producercli.ParseBatch(strings.NewReader(in))
	for i := range lines {
		if lines[i].Request != nil && again[i].Request.InvocationID != lines[i].Request.InvocationID {
			t.Fatalf("line %d: id changed between parses", lines[i].No)
		}
	}
}
