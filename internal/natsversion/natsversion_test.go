package natsversion_test

import (
	"testing"

	"github.com/agentfleet/agentfleet/internal/natsversion"
)

func TestAtLeast(t *testing.T) {
	for _, tc := range []struct {
		v, min         string
		atLeast, known bool
	}{
		{"2.9.10", "2.9.18", false, true},
		{"2.9.18", "2.9.18", true, true},
		{"2.9.18-RC.1", "2.9.18", false, true},
		{"2.11.0-dev", "2.9.18", true, true},
		{"v2.10.4", "2.9.18", true, true},
		{"2.10.0-beta.5", "2.9.21", true, true},
		{"3.0.0", "2.9.21", true, true},
		{"1.99.99", "2.9.18", false, true},
		{"", "2.9.18", false, false},
		{"dev", "2.9.18", false, false},
		{"2.10", "2.9.18", false, false},
		{"2.x.1", "2.9.18", false, false},
		{"2.10.-1", "2.9.18", false, false},
	} {
		if a, k := natsversion.AtLeast(tc.v, tc.min); a != tc.atLeast || k != tc.known {
			t.Errorf("AtLeast(%q, %q) = %v, %v; want %v, %v", tc.v, tc.min, a, k, tc.atLeast, tc.known)
		}
	}
}
