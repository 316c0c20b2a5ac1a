package app

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/internal/config"
)

// unwritableDir returns an existing directory in which no file can be
// created (a read-only volume, a volume owned by another user), or skips.
func unwritableDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, "/sys"} { // root ignores modes; sysfs refuses new files even to root
		f, err := os.OpenFile(filepath.Join(d, embeddedLockFile), os.O_CREATE|os.O_RDONLY, 0o600)
		if err != nil {
			return d
		}
		_ = f.Close()
		_ = os.Remove(filepath.Join(d, embeddedLockFile))
	}
	t.Skip("no unwritable existing directory here")
	return ""
}

// Regression (found in review of this session's fix, twenty-second
// session): an embedded.data_dir that exists but cannot be written (the usual shape
// of "a read-only volume" or "without permission", which the new comment
// names: the volume is mounted at the data dir, so MkdirAll succeeds) fails
// at the lock file instead, with "embedded: lock data dir ...", not
// ErrBadConfig: exit 1, restarted for ever, the case the fix meant to end.
func TestExistingUnwritableDataDirIsBadConfig(t *testing.T) {
	dir := unwritableDir(t)
	e, err := StartEmbedded(config.Embedded{Enabled: true, DataDir: dir, Port: -1}, zerolog.Nop())
	if err == nil {
		e.Close()
		t.Fatalf("StartEmbedded(%s) started", dir)
	}
	if !errors.Is(err, ErrBadConfig) {
		t.Errorf("StartEmbedded on an existing, unwritable data dir: %v; want an error matching ErrBadConfig (exit 2)", err)
	}
}
