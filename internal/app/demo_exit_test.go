package app

import (
	"bytes"
	"testing"
)

// ErrBadConfig exits 2 for `worker` but the --demo path still returns 1
// for the same unusable model (gemini without a key): WorkerMain checks
// errors.Is(err, ErrBadConfig) only after RunWorker, not after RunDemo.
func TestDemoWithAnUnusableModelExits2(t *testing.T) {
	t.Setenv("AGENTFLEET_EMBEDDED_PORT", "-1")
	t.Setenv("GEMINI_API_KEY", "")
	t.Setenv("GOOGLE_API_KEY", "")
	var out, errOut bytes.Buffer
	code := WorkerMain([]string{"--demo", "1", "--model", "gemini:gemini-2.5-flash", "--embedded", "--data-dir", t.TempDir()}, &out, &errOut)
	if code != 2 {
		t.Errorf("exit code %d, want 2 (stderr %q)", code, errOut.String())
	}
}
