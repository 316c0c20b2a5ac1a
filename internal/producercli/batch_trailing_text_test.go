package producercli_test

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/producercli"
)

// Regression (found in review, seventeenth session): ParseBatch promises that a line that is not a valid request is returned
// with Err set ("more than one JSON value on the line" is checked with
// json.Decoder.More). But More reports false when the next byte is '}' or
// ']', so a line with a stray closing bracket after the object (the last
// line of a JSON array pasted as JSON Lines, a mangled edit) is accepted as
// valid, while the lines before it with a ',' are invalid.
func TestParseBatchRefusesTrailingClosingBracket(t *testing.T) {
	file := `{"agent":"support","user_id":"u1","session_id":"s1","text":"one"},
{"agent":"support","user_id":"u2","session_id":"s2","text":"two"}]
{"agent":"support","user_id":"u3","session_id":"s3","text":"three"}}
`
	lines, err := producercli.ParseBatch(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3", len(lines))
	}
	for _, l := range lines {
		if l.Err == nil {
			t.Errorf("line %d is not valid JSON (a trailing bracket) but was accepted as request %s", l.No, l.Request.InvocationID)
		}
	}
}
