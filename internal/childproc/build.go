package childproc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Build builds pkg (e.g. ./cmd/worker) of the module in moduleDir into out
// with the go command on PATH (or under $GOROOT).
func Build(ctx context.Context, moduleDir, pkg, out string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", out, pkg)
	cmd.Dir = moduleDir
	cmd.Env = os.Environ()
	b, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("childproc: go build %s: %w: %s", pkg, err, strings.TrimSpace(string(b)))
	}
	return nil
}

// Env is the environment for a child: this process's, minus every
// AGENTFLEET_* setting (so the caller's configuration does not leak into a
// fleet the harness configures itself), plus extra.
func Env(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "AGENTFLEET_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// FindModuleDir returns the directory of the go.mod at or above dir.
func FindModuleDir(dir string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("childproc: module dir: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("childproc: no go.mod at or above %s", dir)
		}
		d = parent
	}
}
