package tool_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// Regression (found in review, eighteenth session): the sanitiser redacts
// secrets named in key=value pairs, JSON keys and "password: …", but a
// secret in the other common shapes of an error text reached the model
// (and may be echoed to the user):
//   - Go's own formatting of a config struct or map (fmt's %v / %+v, the
//     commonest way a Go tool puts its settings in an error),
//   - the "name: value" form (a YAML or log line) for every secret name but
//     password,
//   - Gemini's API key header, x-goog-api-key.
func TestSanitizeRedactsSecretsInCommonErrorShapes(t *testing.T) {
	type ordersConfig struct {
		BaseURL string
		APIKey  string
	}
	cfg := ordersConfig{BaseURL: "orders", APIKey: "sk-live-51Habc123def456"}
	cases := map[string]struct{ in, secret string }{
		"struct %+v":          {fmt.Sprintf("orders client %+v: connection refused", cfg), "sk-live-51Habc123def456"},
		"map %v":              {fmt.Sprintf("bad settings %v", map[string]string{"api_key": "sk-live-51Habc123def456"}), "sk-live-51Habc123def456"},
		"yaml api_key":        {"load config: api_key: sk-live-51Habc123def456", "sk-live-51Habc123def456"},
		"yaml client_secret":  {"oauth: client_secret: 9f8e7d6c5b4a3210fedc", "9f8e7d6c5b4a3210fedc"},
		"goog header":         {"request headers: x-goog-api-key: AIzaSyD-EXAMPLEkey1234567", "AIzaSyD-EXAMPLEkey1234567"},
		"struct camel prefix": {fmt.Sprintf("db %+v: refused", struct{ Host, DBPassword string }{"db", "hunter2xyz"}), "hunter2xyz"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got := tool.SanitizeString(c.in)
			if strings.Contains(got, c.secret) {
				t.Errorf("SanitizeString(%q) = %q: the secret reaches the model", c.in, got)
			}
			m := tool.Sanitize(tool.Error("orders_failed", false, c.in))
			if strings.Contains(fmt.Sprint(m), c.secret) {
				t.Errorf("error map still holds the secret: %v", m)
			}
		})
	}
}

// Regression (found in review, eighteenth session): the "name: value"
// form now covers every secret's name, with the sentence-word guard
// "password:" had: a validation message about a secret is not one.
func TestSanitizeKeepsSecretValidationText(t *testing.T) {
	for _, tc := range []struct{ text, keep string }{
		{"Invalid api_key: must be 32 characters", "must be 32 characters"},
		{"oauth: client_secret: is required", "is required"},
		{"refresh failed: invalid token: expired", "expired"},
		{"webhook signature: mismatch for event evt_1", "mismatch for event"},
		{"decode arguments: unexpected token: EOF", "unexpected token: EOF"},
		{"parse filter: unexpected token: } at offset 14", "unexpected token: }"},
	} {
		m := tool.Sanitize(tool.Error("invalid_input", false, tc.text))
		if got := fmt.Sprint(m["hint"]); !strings.Contains(got, tc.keep) {
			t.Errorf("Sanitize hint %q = %q: the ordinary words %q the model needs were redacted", tc.text, got, tc.keep)
		}
	}
}
