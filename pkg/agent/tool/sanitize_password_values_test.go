package tool_test

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// Regression (found in review, seventeenth session): e94bea8 made
// passwordColonRE redact a bare "password: X" value only when X ends the
// text or is followed by , ; ) ] }. A credential followed by more words,
// a quote or a comment now reaches the model (and the DLQ reason) whole;
// 3a4dc4d redacted every one of these.
func TestSanitizeStillRedactsPasswordsFollowedByText(t *testing.T) {
	const secret = "hunter2xyz"
	for _, in := range []string{
		`login rejected: password: ` + secret + ` for user admin`,
		`{"error": "bad password: ` + secret + `"}`,
		`config line 3: db_password: ` + secret + ` # from vault`,
		`db_password: ` + secret + ` user: admin`,
	} {
		if got := tool.SanitizeString(in); strings.Contains(got, secret) {
			t.Errorf("SanitizeString(%q) = %q: the password is kept", in, got)
		}
	}
}

// Regression (found in review, seventeenth session): secretJSONRE's value
// alternative was narrowed from any bare token to a number (to keep JSON
// arrays), so a secret key with a single-quoted or bare non-numeric value
// (a Python/JS repr or a hand-written log line quoting a body) passes
// whole; 3a4dc4d redacted it.
func TestSanitizeStillRedactsUnquotedJSONSecrets(t *testing.T) {
	for _, tc := range []struct{ in, secret string }{
		{`upstream said {"api_key": sk-live-abc123}`, "sk-live-abc123"},
		{`request body {"password": 'hunter2xyz'}`, "hunter2xyz"},
		{`request body {"token": abc123def456}`, "abc123def456"},
	} {
		if got := tool.SanitizeString(tc.in); strings.Contains(got, tc.secret) {
			t.Errorf("SanitizeString(%q) = %q: the secret is kept", tc.in, got)
		}
	}
}
