package replayer

import (
	"strings"
	"testing"
)

// Regression (left open in the twenty-third session, fixed in the twenty-fourth): like an
// interrupted replay, a purge that ^C stopped between its deletes ended
// with "after 0 deleted: context canceled". It says how many entries it
// deleted and how many stay in the DLQ (the one whose delete was in flight
// perhaps not); the exit code stays 130.
//
// The purge's connection goes through a proxy that swallows what it sends
// once the prompt was answered, so its first delete gets no answer; ^C
// comes once that delete was sent.
func TestInterruptedPurgeSaysWhatItDeletedAndLeft(t *testing.T) {
	x := newFx(t, false)
	x.seed("pg", 3, "UNKNOWN", 0)
	code, _, stderr := interruptPurgeMidDelete(t, x, "--class", "UNKNOWN")
	if code != ExitInterrupted {
		t.Fatalf("exit %d, want %d", code, ExitInterrupted)
	}
	if strings.Contains(stderr, "context canceled") {
		t.Fatalf("stderr says %q instead of what the purge did", "context canceled")
	}
	contains(t, stderr, "dlq-replayer purge: interrupted: 0 entries deleted", "the other 3 stay in "+x.sc.DLQStream)
	if n := len(x.dlqIDs()); n != 3 {
		t.Fatalf("the DLQ holds %d entries, want 3 (the swallowed delete never reached the server)", n)
	}
}
