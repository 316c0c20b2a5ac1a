package tool_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// Regression (found in review, seventeenth session): the sanitiser redacts key=value credentials named api_key, token,
// secret, access_key, secret_key and DSN "password=", but its patterns start
// with \b, and "_" is a word character: the same names with a prefix
// (stripe_api_key, db_password, GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY), the
// usual spelling in configs and environment dumps, pass untouched into the
// error map the model reads and may echo to the user.
func TestSanitizeRedactsPrefixedSecretNames(t *testing.T) {
	for _, tc := range []struct{ text, secret string }{
		{"charge failed: stripe_api_key=sk_live_51HxQ2abc is not valid", "sk_live_51HxQ2abc"},
		{"connect failed: db_password=hunter2", "hunter2"},
		{"clone failed: GITHUB_TOKEN=ghp_abcdef1234567", "ghp_abcdef1234567"},
		{"upload failed: AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENG", "wJalrXUtnFEMIK7MDENG"},
	} {
		m := tool.Sanitize(tool.Error("downstream_failed", true, tc.text))
		if got := fmt.Sprint(m["hint"]); strings.Contains(got, tc.secret) {
			t.Errorf("Sanitize hint %q = %q: the credential reaches the model", tc.text, got)
		}
	}
}

// Regression (found in review, seventeenth session): a credential in JSON form (an error that quotes the request or
// config body it failed on) is not redacted either: only "name=value" and
// header shapes are recognised.
func TestSanitizeRedactsJSONQuotedCredentials(t *testing.T) {
	const secret = "sk_live_51HxQ2abc"
	for _, in := range []string{
		`charge rejected: {"api_key": "` + secret + `", "amount": 100}`,
		`refund rejected: {"token":"` + secret + `"}`,
	} {
		m := tool.Sanitize(tool.Error("downstream_failed", false, in))
		if got := fmt.Sprint(m["hint"]); strings.Contains(got, secret) {
			t.Errorf("Sanitize hint %q = %q: the credential reaches the model", in, got)
		}
	}
}
