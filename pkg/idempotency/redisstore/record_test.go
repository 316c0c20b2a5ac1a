package redisstore

import (
	"strings"
	"testing"
)

// FuzzParseRecord: a record read from Redis (perhaps written by another
// version, or by hand) never panics the decoder, and what decodes re-reads
// the same state and owner lines.
func FuzzParseRecord(f *testing.F) {
	f.Add("in_progress\nw/1\n1\n1764400000000\n1764400030000\n{\"invocation\":\"i\"}")
	f.Add("completed\nw/1\n2\n1764400000000\n1764400030000\n{\"key\":\"k\"}\n1764400001000\n{\"status\":\"ok\"}")
	f.Add("completed\nw/1\n2\n1\n2\n{}\n3\n{\"a\":\n1}")
	f.Add(`{"state":"in_progress"}`)
	f.Fuzz(func(t *testing.T, s string) {
		r, err := parseRecord("k", s)
		if err != nil {
			return
		}
		lines := strings.SplitN(s, "\n", 3)
		if string(r.State) != lines[0] || r.Owner != lines[1] {
			t.Fatalf("parsed state %q owner %q from %q", r.State, r.Owner, s)
		}
	})
}

func TestParseRecordRejects(t *testing.T) {
	for _, s := range []string{
		"",
		`{"state":"completed"}`,
		"in_progress\nw/1\n1\n1\n2\n{}\n3\n{}",       // in progress with a result
		"completed\nw/1\n1\n1\n2\n{}",                // completed without one
		"in_progress\nw/1\nx\n1\n2\n{}",              // attempts
		"in_progress\nw/1\n1\n1\n2\nnot json",        // meta
		"completed\nw/1\n1\n1\n2\n{}\nyesterday\n{}", // completed_at
	} {
		if _, err := parseRecord("k", s); err == nil {
			t.Errorf("parseRecord(%q) = nil error", s)
		}
	}
}
