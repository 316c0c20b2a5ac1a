package producercli_test

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/producercli"
)

// Regression (found in review, twenty-second session): a batch line with both
// the "text" shortcut and a "message" is refused, saying to give one of the
// two. It was sent with the message only: the text was dropped without a
// word, so the user got a result for one of the two texts they wrote and
// never learnt the other was not sent. When the message had no text part
// the line was refused with "message has no text part", although it has a
// text.
func TestParseBatchRefusesTextWithMessage(t *testing.T) {
	const in = `{"agent":"support","user_id":"u1","session_id":"s1","text":"cancel order A-1","message":{"role":"user","parts":[{"text":"refund order A-2"}]}}` + "\n" +
		`{"agent":"support","user_id":"u1","session_id":"s1","text":"cancel order A-1","message":{"role":"user","parts":[]}}` + "\n"
	lines, err := producercli.ParseBatch(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2", len(lines))
	}
	if l := lines[0]; l.Err == nil {
		t.Errorf("line 1 (text and message) accepted; it sends %q and drops the text %q", l.Request.Message.Text(), "cancel order A-1")
	}
	if l := lines[1]; l.Err == nil || !strings.Contains(l.Err.Error(), "text") || strings.Contains(l.Err.Error(), "has no text part") {
		t.Errorf("line 2 (a text and an empty message): err = %v; want a refusal naming both text and message, not \"no text part\"", l.Err)
	}
}
