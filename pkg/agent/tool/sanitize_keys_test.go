package tool

import (
	"reflect"
	"strings"
	"testing"
)

// sanitizeKeys cuts a colliding key to MaxErrorStringLen-8 runes and adds
// "#2" without sanitising the result: the cut can make a new match
// ("... 1.2.3.4567" cut to "... 1.2.3.45"), which a second Sanitize
// redacts, so Sanitize is not idempotent (the property FuzzSanitizeMap
// states; a resumed invocation sanitises a stored error map again).
func TestSanitizeCollidingKeyIsIdempotent(t *testing.T) {
	k := strings.Repeat("a ", 92) + "1.2.3.4567" // 194 runes, a fixed point of SanitizeString
	if SanitizeString(k) != k {
		t.Fatalf("setup: %q is not a fixed point", k)
	}
	m := map[string]any{"status": "error", k: 1, k + "\nz": 2}
	once := Sanitize(m)
	if twice := Sanitize(once); !reflect.DeepEqual(once, twice) {
		var keys []string
		for k := range once {
			keys = append(keys, k[len(k)-min(len(k), 20):])
		}
		t.Fatalf("Sanitize not idempotent: key tails after one pass %q; a second pass changes them", keys)
	}
}
