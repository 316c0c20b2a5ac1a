package producercli_test

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/producercli"
)

// Regression (found in review, twenty-second session): two batch lines that
// differ only in an escaped lone surrogate do not get one derived id. The
// seventeenth session refused lines whose bytes are not UTF-8 because
// encoding/json read each bad byte as U+FFFD: two lines that differ in one
// letter got one derived id and the second never ran. The same held for
// JSON-escaped lone surrogates ("\ud800", "\udbff": valid ASCII bytes, what
// a JavaScript tool writes for a string cut inside a surrogate pair): both
// decode to U+FFFD, the two lines below got one derived id, and RunBatch
// reported the second as "skipped (duplicate line)" without sending it.
func TestParseBatchLoneSurrogatesDoNotMergeLines(t *testing.T) {
	const in = `{"agent":"support","user_id":"u1","session_id":"s1","text":"refund \ud83d"}` + "\n" +
		`{"agent":"support","user_id":"u1","session_id":"s1","text":"refund \ud83c"}` + "\n"
	lines, err := producercli.ParseBatch(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2", len(lines))
	}
	if lines[0].Err != nil || lines[1].Err != nil {
		return // refused: fine
	}
	if a, b := lines[0].Request.InvocationID, lines[1].Request.InvocationID; a == b {
		t.Fatalf("two different lines got one derived id %s (texts %q and %q): the second would never run",
			a, lines[0].Request.Message.Text(), lines[1].Request.Message.Text())
	}
}
