package kvbucket

import "testing"

func TestAtomicRevisionChecks(t *testing.T) {
	for v, want := range map[string]bool{
		"2.9.10": false, "2.9.20": false, "2.9.21": true, "2.9.25": true, "2.8.4": false,
		"2.10.0": true, "2.12.1": true, "3.0.0": true, "1.4.1": false, "2.10.0-beta.5": true, "dev": true,
		// Found in review, twenty-fourth session: a pre-release of 2.9.21
		// carries the fix; a "v" prefix or build metadata is read, not
		// trusted as unreadable.
		"2.9.21-RC.1": true, "2.9.21-beta.2": true, "2.9.20-RC.1": false, "v2.9.20": false, "2.9.20+build": false, "": true,
	} {
		if got := atomicRevisionChecks(v); got != want {
			t.Errorf("atomicRevisionChecks(%q) = %v, want %v", v, got, want)
		}
	}
}
