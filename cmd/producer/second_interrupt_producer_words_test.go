package main

import (
	"os"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/producercli"
	"github.com/agentfleet/agentfleet/internal/shutdown"
	"github.com/agentfleet/agentfleet/internal/shutdown/shutdowntest"
)

// runMainEnv makes the test binary run main instead of the tests.
const runMainEnv = "PRODUCER_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main() // exits
	}
	os.Exit(m.Run())
}

// Regression (found in review, twenty-fourth session): the producer's
// second ^C spoke the worker's words, "exiting at once (what was in hand
// is redelivered)": the producer holds no message
// that JetStream redelivers (a request it published stays published, one
// it had not sent is not sent; a rerun of a batch file skips what
// completed). Commit 2d85359 gave the replayer words of its own
// (shutdown.NotifyWith) and left cmd/producer on shutdown.Notify.
func TestProducerSecondInterruptSpeaksItsOwnWords(t *testing.T) {
	text, code := shutdowntest.SecondInterrupt(t, runMainEnv, 5, "await", "inv-second-interrupt")
	t.Logf("exit %d\nstderr:\n%s", code, text)
	if strings.Contains(text, shutdown.WorkerForcedNote) {
		t.Fatalf("the producer's second ^C says the worker's %q, which is not true of a producer:\n%s", shutdown.WorkerForcedNote, text)
	}
	if !strings.Contains(text, producercli.ForcedExitNote) {
		t.Fatalf("the producer's second ^C does not say what exiting at once leaves behind (%q):\n%s", producercli.ForcedExitNote, text)
	}
}
