package replayer

import (
	"testing"
	"unicode/utf8"
)

// Regression (found in review, twenty-first session): clip cuts between
// characters; it cut at a byte, so a table cell of a non-ASCII reason could
// end in half a character.
func TestClipCutsBetweenCharacters(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"abcdefghij", 5, "abcd…"},
		{"ééééé", 6, "éé…"},   // the cut at byte 5 falls inside the third é
		{"日本語テキスト", 7, "日本…"}, // byte 6 starts 語: kept out
	} {
		got := clip(tc.in, tc.n)
		if got != tc.want || !utf8.ValidString(got) {
			t.Errorf("clip(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
