package tool_test

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// Regression (found in review, eighteenth session): Commit 1890bd3 keeps the value after "invalid token:" / "bad token:" (a
// parser's grammar token, it reads) unless it "looks like a credential":
// 16 characters or more with letters and digits, or a known key prefix.
// But "invalid token: <value>" is how an auth server or a client library
// echoes the credential it was handed, and the value after "token:" was
// redacted before the commit. A short token, a hex or numeric one, or
// one of letters only now reaches the model (and may be echoed to the
// user); a plain "token: <value>" is still redacted.
func TestTokenValueAfterInvalidIsRedacted(t *testing.T) {
	for _, tc := range []struct{ in, secret string }{
		{"orders api: 401 Unauthorized: invalid token: 7f3a9c21e4b8", "7f3a9c21e4b8"}, // 12 hex chars
		{"session refused: bad token: 48213377190512948812", "48213377190512948812"},  // digits only
		{"webhook rejected: invalid token: tok_live_9aZ", "tok_live_9aZ"},             // short, prefixed
	} {
		if got := tool.SanitizeString(tc.in); strings.Contains(got, tc.secret) {
			t.Errorf("SanitizeString(%q) = %q: the token value reaches the model", tc.in, got)
		}
	}
}
