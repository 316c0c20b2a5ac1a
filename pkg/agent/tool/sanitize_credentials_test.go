package tool_test

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// Regression (found in review, sixteenth session): everything in an error map is model input and may be echoed to the
// user (error-recovery seed), and the sanitiser already redacts credentials
// it recognises (DSN "password=", userinfo before "@"). Credentials in the
// other common shapes of error text pass through untouched: a bearer token,
// and key=value pairs named token, api_key or secret.
func TestSanitizeRedactsCredentials(t *testing.T) {
	const secret = "sk_live_51HxQ2abc"
	for _, in := range []string{
		"request rejected: Authorization: Bearer " + secret,
		"charge failed: api_key=" + secret + " is not valid",
		"refund denied for token=" + secret,
		"bad client secret=" + secret,
	} {
		if got := tool.SanitizeString(in); strings.Contains(got, secret) {
			t.Errorf("SanitizeString(%q) = %q: the credential reaches the model", in, got)
		}
	}
}
