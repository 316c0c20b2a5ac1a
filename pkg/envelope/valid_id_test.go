package envelope_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// idReference is the id rule as a regular expression, the reference
// ValidID's loop must agree with.
var idReference = regexp.MustCompile(`^[A-Za-z0-9_\-]{1,128}$`)

func TestValidID(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{"inv-1", true},
		{"A_z-09", true},
		{strings.Repeat("a", 128), true},
		{strings.Repeat("a", 129), false},
		{"", false},
		{"a.b", false},
		{"a*", false},
		{"a>", false},
		{"a b", false},
		{"a\n", false},
		{"é", false},
		{"a\x00", false},
	} {
		if got := envelope.ValidID(tc.id); got != tc.want {
			t.Errorf("ValidID(%q) = %v, want %v", tc.id, got, tc.want)
		}
		if ref := idReference.MatchString(tc.id); ref != tc.want {
			t.Errorf("reference(%q) = %v: the table is wrong", tc.id, ref)
		}
	}
}

// FuzzValidID checks ValidID against the regular expression it replaced.
func FuzzValidID(f *testing.F) {
	for _, s := range []string{"inv-1", "", "a.b", strings.Repeat("Z", 128), strings.Repeat("Z", 129), "é", "a\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := envelope.ValidID(s), idReference.MatchString(s); got != want {
			t.Fatalf("ValidID(%q) = %v, the reference says %v", s, got, want)
		}
	})
}

// BenchmarkValidID compares the loop with the regular expression it
// replaced, in the same run, on a typical invocation id.
func BenchmarkValidID(b *testing.B) {
	const id = "inv-7f3c2a9e-4b1d-4e8a-9c6f-2d5e8b1a0c3f"
	b.Run("loop", func(b *testing.B) {
		for b.Loop() {
			if !envelope.ValidID(id) {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("regexp", func(b *testing.B) {
		for b.Loop() {
			if !idReference.MatchString(id) {
				b.Fatal("invalid")
			}
		}
	})
}
