package app

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Regression (found in review, twenty-second session): an embedded.data_dir
// that cannot be created is ErrBadConfig, exit 2.
//
// An embedded.data_dir that can never be used (here a path under a regular
// file: a typo, or a volume mounted as a file) fails the same way on every
// start, like an unreadable credential file or an out-of-range
// embedded.port, both exit 2. StartEmbedded's "embedded: data dir: mkdir
// ...: not a directory" is not ErrBadConfig, so the worker exits 1 and a
// supervisor restarts it for ever instead of reporting the configuration.
func TestUnusableEmbeddedDataDirExitsTwo(t *testing.T) {
	t.Setenv("AGENTFLEET_EMBEDDED_PORT", "-1")
	t.Setenv("AGENTFLEET_METRICS_ADDR", "")
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- WorkerMain([]string{"--embedded", "--data-dir", filepath.Join(file, "data"), "--log-level", "error"}, &out, &errOut)
	}()
	select {
	case code := <-done:
		if code != 2 {
			t.Errorf("embedded.data_dir under a regular file: exit code %d, want 2 (bad configuration); stderr: %s", code, errOut.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the worker started and ran")
	}
}
