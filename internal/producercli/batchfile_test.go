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

// A line too long to read, or a request larger than a request may be, is
// reported as that line's error; the lines after it are still read, with
// their own numbers (before, one over-long line aborted the whole batch).
func TestParseBatchOversizedLines(t *testing.T) {
	ok := `{"agent":"support","user_id":"u","session_id":"s","text":"hello"}`
	huge := `{"agent":"support","user_id":"u","session_id":"s","text":"` + strings.Repeat("x", 3<<20) + `"}`
	big := `{"agent":"support","user_id":"u","session_id":"s","text":"` + strings.Repeat("y", 3<<19) + `"}` // 1.5 MiB: readable, too large to send
	after := `{"agent":"support","user_id":"u2","session_id":"s","text":"bye"}`
	lines, err := producercli.ParseBatch(strings.NewReader(ok + "\n" + huge + "\n" + big + "\n" + after + "\n"))
	if err != nil {
		t.Fatalf("ParseBatch: %v", err)
	}
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4", len(lines))
	}
	for i, want := range []string{"", "longer than", "more than a request may be", ""} {
		l := lines[i]
		if l.No != i+1 {
			t.Fatalf("line %d numbered %d", i+1, l.No)
		}
		switch {
		case want == "" && l.Err != nil:
			t.Fatalf("line %d: %v", l.No, l.Err)
		case want != "" && (l.Err == nil || !strings.Contains(l.Err.Error(), want)):
			t.Fatalf("line %d: error %v, want %q", l.No, l.Err, want)
		}
		var ie *envelope.InvalidError
		if want != "" && !errors.As(l.Err, &ie) {
			t.Fatalf("line %d: %T is not an envelope.InvalidError", l.No, l.Err)
		}
	}
}

// FuzzParseBatch: a batch file is outside input. Whatever it holds, parsing
// never panics, numbers lines in increasing order, and gives each line a
// valid request or an error.
func FuzzParseBatch(f *testing.F) {
	f.Add([]byte(`{"agent":"support","user_id":"u","session_id":"s","text":"hi"}` + "\n# comment\n\n{not json}\n"))
	f.Add([]byte("\r\n\n\x00\n{\"text\":1}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		lines, err := producercli.ParseBatch(strings.NewReader(string(data)))
		if err != nil {
			t.Fatalf("a read from memory failed: %v", err)
		}
		last := 0
		for _, l := range lines {
			if l.No <= last {
				t.Fatalf("line numbers not increasing: %d after %d", l.No, last)
			}
			last = l.No
			if (l.Err == nil) == (l.Request == nil) {
				t.Fatalf("line %d: request %v and error %v", l.No, l.Request, l.Err)
			}
			if l.Err == nil {
				if err := l.Request.Validate(); err != nil {
					t.Fatalf("line %d parsed into an invalid request: %v", l.No, err)
				}
			}
		}
	})
}
