package tool

import (
	"strings"
	"testing"
)

// Regression (found in review, twentieth session): an API key with a
// well-known prefix (the ones credentialLike itself names: sk-, sk_, ghp_,
// AIza, AKIA, xox…) passed SanitizeString untouched unless a key=value,
// "api_key:" or header shape stood before it. A downstream's 401 text
// ("Invalid API key: sk_live_…", the name has a space) or a key quoted in
// prose reached the model, which may echo it to the user.
func TestSanitizeRedactsBareAPIKeys(t *testing.T) {
	for _, tc := range []struct{ in, secret string }{
		{"Invalid API key: sk_live_abcdefghijklmnop1234", "sk_live_abcdefghijklmnop1234"},
		{"api key sk-proj-abcdefghijklmnopqrstuvwx1234 rejected", "sk-proj-abcdefghijklmnopqrstuvwx1234"},
		{"ghp_abcdefghijklmnopqrstuvwxyz0123456789 is invalid", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"},
		{"invalid api key AIzaSyA-abcdefghijklmnopqrstuvwxyz12345", "AIzaSyA-abcdefghijklmnopqrstuvwxyz12345"},
		{"AKIAIOSFODNN7EXAMPLE: access denied", "AKIAIOSFODNN7EXAMPLE"},
		{"slack said xoxb-123456789012-abcdefghijkl: invalid_auth", "xoxb-123456789012-abcdefghijkl"},
		{"token github_pat_11ABCDEFG0abcdefghijklmnop expired", "github_pat_11ABCDEFG0abcdefghijklmnop"},
		{"sent sk-ant-api03-abcdefghijklmnop_qrstuv-wx", "sk-ant-api03-abcdefghijklmnop_qrstuv-wx"},
	} {
		if got := SanitizeString(tc.in); strings.Contains(got, tc.secret) {
			t.Errorf("SanitizeString(%q) = %q: the key is kept", tc.in, got)
		}
		m := Sanitize(Error("payment_failed", false, tc.in))
		if h, _ := m["hint"].(string); strings.Contains(h, tc.secret) {
			t.Errorf("Sanitize kept the key in the hint: %q", h)
		}
	}
}

// Words that share a key's prefix but hold no key material stay text.
func TestSanitizeKeepsWordsWithAKeyPrefix(t *testing.T) {
	for _, in := range []string{
		"sk-learn-compatible-estimators only",
		"the task_manager_configuration failed",
		"AKIA is the prefix of an AWS key id",
		"xox is not a token",
		"see ASIAPACIFICREGIONALOFFICES for details",
	} {
		if got := SanitizeString(in); got != in {
			t.Errorf("SanitizeString(%q) = %q, want it unchanged", in, got)
		}
	}
}
