package main

import (
	"os"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/replayer"
	"github.com/agentfleet/agentfleet/internal/shutdown"
	"github.com/agentfleet/agentfleet/internal/shutdown/shutdowntest"
)

// runMainEnv makes the test binary run main instead of the tests.
const runMainEnv = "DLQ_REPLAYER_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main() // exits
	}
	os.Exit(m.Run())
}

// Regression (left open in the twenty-third session, fixed in the twenty-fourth): the
// dlq-replayer's second ^C said the worker's words, "exiting at once (what
// was in hand is redelivered)": a replayer holds no message to be
// redelivered, and on-call was not told what an exit at once leaves
// behind. It now says the replayer's own (replayer.ForcedExitNote); the
// worker keeps its words.
//
// The command runs as a process of its own, on NATS URLs of servers that
// accept the connection and never answer: nats.Connect waits on each (it
// does not heed ^C), so the process is still running when the second ^C
// comes.
func TestSecondInterruptSaysWhatTheReplayerLeaves(t *testing.T) {
	text, code := shutdowntest.SecondInterrupt(t, runMainEnv, 20, "stats")
	t.Logf("exit %d\nstderr:\n%s", code, text)
	if code != shutdown.ForcedExitCode {
		t.Fatalf("exit code %d, want %d", code, shutdown.ForcedExitCode)
	}
	if !strings.Contains(text, "interrupt again: exiting at once ("+replayer.ForcedExitNote+")") {
		t.Fatalf("the second ^C's line does not say the replayer's note %q:\n%s", replayer.ForcedExitNote, text)
	}
	if strings.Contains(text, shutdown.WorkerForcedNote) {
		t.Fatalf("the second ^C's line speaks the worker's words %q:\n%s", shutdown.WorkerForcedNote, text)
	}
}
