package gemini

import (
	"strings"
	"testing"
)

// eventHead keeps the start of the event being read whatever the reads'
// sizes (an event boundary split across two reads included), and
// isErrorEvent tells a half error event from a half chunk of the answer.
func TestEventHeadAndIsErrorEvent(t *testing.T) {
	const fin = `data: {"candidates": [{"content": {"parts": [{"text": "done."}]}, "finishReason": "STOP"}]}`
	cases := []struct {
		body  string
		head  string
		error bool
	}{
		{fin + "\r\n\r\n" + `data: {"error": {"code": 503, "message": "The model is overlo`, `data: {"error": {"code": 503, "message": "The model is overlo`, true},
		{fin + "\n\n" + `data:{ "error" : {`, `data:{ "error" : {`, true},
		{fin + "\r\n\r\n" + "{\n  \"error\": {\n    \"code\": 500", "{\n  \"error\": {\n    \"code\": 500", true},
		{fin + "\r\n\r\n" + `data: {"responseId": "r-1", "error": {"code": 500`, `data: {"responseId": "r-1", "error": {"code": 500`, true},
		{fin + "\r\n\r\n" + `data: {"candidates": [{"content": {"parts": [{"text": "x"}]}`, `data: {"candidates": [{"content": {"parts": [{"text": "x"}]}`, false},
		{fin + "\r\n\r\n" + `data: {"err`, `data: {"err`, false},
		{fin + "\r\n\r\n", "", false},
		{fin, fin, false},
	}
	for _, tc := range cases {
		for _, size := range []int{1, 2, 3, 7, len(tc.body)} {
			var h eventHead
			for b := tc.body; b != ""; {
				n := min(size, len(b))
				h.add([]byte(b[:n]))
				b = b[n:]
			}
			if got := string(h.snapshot()); got != tc.head {
				t.Errorf("body %q read %d bytes at a time: head %q, want %q", tc.body, size, got, tc.head)
			}
			if got := isErrorEvent(h.snapshot()); got != tc.error {
				t.Errorf("isErrorEvent(%q) = %v, want %v", tc.head, got, tc.error)
			}
		}
	}

	var h eventHead
	h.add([]byte("data: " + strings.Repeat("x", 2*maxEventHead)))
	if got := len(h.snapshot()); got != maxEventHead {
		t.Errorf("a long event keeps %d bytes, want %d", got, maxEventHead)
	}
}
