package worker

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

func TestFitResult(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string
		limit   int
		cut     bool
	}{
		{"fits", "Refunded 1091 cents.", 1000, false},
		{"no limit", strings.Repeat("x", 5000), 0, false},
		{"plain text", strings.Repeat("x", 5000), 1000, true},
		{"escaped markup: six bytes per character", strings.Repeat("<b>&</b>", 2000), 4000, true},
		{"multi-byte runes are not split", strings.Repeat("é€😀", 2000), 3001, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := &envelope.Result{V: envelope.Version, InvocationID: "inv-1", Status: envelope.StatusCompleted, Content: tc.content}
			if err := fitResult(res, tc.limit); err != nil {
				t.Fatal(err)
			}
			data, err := res.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if tc.limit > 0 && len(data) > tc.limit {
				t.Fatalf("encoded %d bytes, limit %d", len(data), tc.limit)
			}
			if res.Truncated != tc.cut || (res.Content != tc.content) != tc.cut {
				t.Fatalf("cut %v (truncated %v, %d of %d bytes kept), want cut %v", res.Content != tc.content, res.Truncated, len(res.Content), len(tc.content), tc.cut)
			}
			if !strings.HasPrefix(tc.content, res.Content) || !utf8.ValidString(res.Content) {
				t.Fatal("the content kept is not a valid prefix of the answer")
			}
			if tc.cut && len(data) < tc.limit*3/4 {
				t.Fatalf("cut to %d bytes for a limit of %d: far more than needed", len(data), tc.limit)
			}
			if data, _ := res.Encode(); len(data) > maxEncoded(res) {
				t.Fatalf("encoded %d bytes, above the bound %d", len(data), maxEncoded(res))
			}
			// Deterministic: fitting the fitted result changes nothing, so
			// the recorded and the re-published result are the same bytes.
			again := *res
			if err := fitResult(&again, tc.limit); err != nil {
				t.Fatal(err)
			}
			if again.Content != res.Content {
				t.Fatal("a second fit changed the result")
			}
		})
	}
}

// A result that does not fit even without its content (a degraded answer
// as the user message) keeps no content and the longest prefix of the
// message that fits.
func TestFitResultCutsTheUserMessage(t *testing.T) {
	msg := strings.Repeat("<b>&</b>", 2000)
	res := &envelope.Result{V: envelope.Version, InvocationID: "inv-1", Status: envelope.StatusDeadLettered,
		Content: "some content", UserMessage: msg}
	if err := fitResult(res, 4000); err != nil {
		t.Fatal(err)
	}
	data, err := res.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 4000 || len(data) < 3000 {
		t.Fatalf("encoded %d bytes, want at most 4000 and not far less", len(data))
	}
	if res.Content != "" || !res.Truncated || res.UserMessage == "" || !strings.HasPrefix(msg, res.UserMessage) {
		t.Fatalf("content %q, truncated %v, message of %d bytes: want no content and a prefix of the message", res.Content, res.Truncated, len(res.UserMessage))
	}
}
