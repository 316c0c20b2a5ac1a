package config_test

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/config"
)

// Regression (found in review, sixteenth session): A Redis password holding '#' or '?' (not percent-encoded, the typo
// RedactURL promises to survive) cuts the authority there: url.Parse then
// reads "user:<digits>" as host and port and the rest, with the '@', as
// fragment or query. plainHost catches a non-numeric start of the password
// (an invalid port) but not a numeric one, so the password's first part is
// printed in the worker's start-up log line ("redis" field) and in the
// "does not answer" error.
func TestRedactURLHidesANumericPasswordStartCutByHashOrQuery(t *testing.T) {
	for _, tc := range []struct{ url, secret string }{
		{"redis://app:90210#Zx@redis.internal:6379/0", "90210"},
		{"redis://app:90210?Zx@redis.internal:6379/0", "90210"},
		{"rediss://:4711#pw@redis.internal:6380", "4711"},
	} {
		if got := config.RedactURL(tc.url); strings.Contains(got, tc.secret) {
			t.Errorf("RedactURL(%q) = %q: the start of the password (%q) is printed", tc.url, got, tc.secret)
		}
	}
}
