package tool

import (
	"strings"
	"testing"
)

// Regression (found in review, twenty-first session): a first line longer
// than maxSanitizedLine bytes is redacted whole before any pattern runs,
// and one of that length or shorter is sanitised as before.
func TestSanitizeLongFirstLineRedactedWhole(t *testing.T) {
	fits := "order " + strings.Repeat("x", maxSanitizedLine-len("order "))
	if got := SanitizeString(fits); !strings.HasPrefix(got, "order xxx") || !strings.HasSuffix(got, "…") {
		t.Errorf("a line of maxSanitizedLine bytes: %q", got)
	}
	for _, in := range []string{
		fits + "x",
		// Cut at the bound, this would show "select …": its FROM is past it.
		"select " + strings.Repeat("a", maxSanitizedLine) + " from t",
		// Cut at the bound, the password would show: its "@" is past it.
		"https://" + strings.Repeat("u", maxSanitizedLine-100) + " admin:" + strings.Repeat("p", 200) + "@db",
	} {
		if got := SanitizeString(in); got != redacted {
			t.Errorf("a first line of %d bytes: %q, want %q", len(in), got, redacted)
		}
	}
	// Only the first line counts.
	if got := SanitizeString("order A-1 not found\n" + strings.Repeat("x", 2*maxSanitizedLine)); got != "order A-1 not found" {
		t.Errorf("a short first line: %q", got)
	}
}

// BenchmarkSanitizeX509List: a HostnameError list of the longest line
// SanitizeString reads; redactX509ValidFor is linear in it.
func BenchmarkSanitizeX509List(b *testing.B) {
	s := "x509: certificate is valid for " + strings.Repeat("gw.acme-corp.net, ", maxSanitizedLine/20) + "a, not b"
	for b.Loop() {
		SanitizeString(s)
	}
}
