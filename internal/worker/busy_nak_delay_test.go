package worker

import (
	"testing"
	"time"
)

// Regression (found in review, twenty-third session): a busy session's
// message was always put back after exactly BusyDelay, so messages turned
// away together came back together, one took the session and the rest
// waited again together: a queue of one session's requests drained at one
// per cycle. The delay is jittered within [BusyDelay/2, 3·BusyDelay/2).
func TestBusyNakDelayIsJitteredAroundBusyDelay(t *testing.T) {
	c := Config{BusyDelay: 2 * time.Second}
	seen := map[time.Duration]bool{}
	for range 200 {
		d := c.busyNakDelay()
		if d < time.Second || d >= 3*time.Second {
			t.Fatalf("busyNakDelay() = %v, want within [1s, 3s)", d)
		}
		seen[d] = true
	}
	if len(seen) < 100 {
		t.Fatalf("%d distinct delays in 200 draws: not jittered", len(seen))
	}
	if d := (Config{}).busyNakDelay(); d != 0 {
		t.Fatalf("busyNakDelay() with no BusyDelay = %v, want 0", d)
	}
}
