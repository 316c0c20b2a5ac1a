package tool_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// Regression (found in review, seventeenth session): "password:" followed by a
// validation message is not a credential. passwordColonRE (new) redacts
// the first word after any "password:" so the model can no longer tell the
// user what was wrong ("must be at least 8 characters" loses "must"). The
// pre-change sanitiser left these messages whole.
func TestSanitizeKeepsPasswordValidationText(t *testing.T) {
	for _, tc := range []struct{ text, keep string }{
		{"Invalid password: must be at least 8 characters", "must be at least 8 characters"},
		{"wrong password: account locked after 3 tries", "account locked after 3 tries"},
		{"password: reset link sent to the customer", "reset link sent"},
	} {
		m := tool.Sanitize(tool.Error("invalid_input", false, tc.text))
		if got := fmt.Sprint(m["hint"]); !strings.Contains(got, tc.keep) {
			t.Errorf("Sanitize hint %q = %q: the ordinary words %q the model needs were redacted", tc.text, got, tc.keep)
		}
	}
}

// Regression (found in review, seventeenth session): a JSON validation
// error keyed by a secret's name holds messages, not the secret
// (Rails/DRF style {"password": ["is too short"]}). secretJSONRE's unquoted
// alternative [^\s,}\]]+ eats `["is`, leaving broken JSON and a mangled
// message.
func TestSanitizeJSONValidationErrorsStayReadable(t *testing.T) {
	in := `signup rejected: {"errors": {"password": ["is too short (minimum is 8 characters)"]}}`
	m := tool.Sanitize(tool.Error("invalid_input", false, in))
	got := fmt.Sprint(m["hint"])
	if !strings.Contains(got, `["is too short (minimum is 8 characters)"]`) {
		t.Errorf("Sanitize hint %q = %q: a validation message array was mangled", in, got)
	}
}

// Regression (found in review, seventeenth session): passwordColonRE
// handles 'single' quotes and bare values, but its value class excludes
// '"', so a YAML/log line with a double-quoted password passes whole.
func TestSanitizeRedactsDoubleQuotedPasswordColon(t *testing.T) {
	const secret = "hunter2xyz"
	for _, in := range []string{
		`login failed: password: "` + secret + `"`,
		`config error: db_password: "` + secret + `"`,
	} {
		m := tool.Sanitize(tool.Error("downstream_failed", false, in))
		if got := fmt.Sprint(m["hint"]); strings.Contains(got, secret) {
			t.Errorf("Sanitize hint %q = %q: the credential reaches the model", in, got)
		}
	}
}
