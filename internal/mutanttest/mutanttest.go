// Package mutanttest proves that a conformance suite fails a broken
// backend: a test runs the suite against a deliberately broken copy of a
// backend (a mutant) in a child process of the test binary, and fails when
// the suite passes there. The idempotency and session suites use it.
package mutanttest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// Run runs suite for the mutant kind. In the test process it starts the
// test binary again, running only t's test with the environment variable
// env set to kind, and fails t when that child passes: the suite did not
// catch a backend where bug holds. In the child (env set) it runs suite
// itself, or skips when env names another mutant.
func Run(t *testing.T, env, kind, bug string, suite func(t *testing.T)) {
	t.Helper()
	if k := os.Getenv(env); k != "" {
		if k != kind {
			t.Skip("another mutant")
		}
		suite(t)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), env+"="+kind)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("child timed out:\n%s", out)
	}
	if err == nil {
		t.Fatalf("the conformance suite PASSED a backend where %s (mutant %q); it must fail such a backend.\nchild output tail:\n%s",
			bug, kind, Tail(out, 600))
	}
	t.Logf("the suite caught mutant %q:\n%s", kind, Tail(out, 1500))
}

// Tail is the last n bytes of b, as a string.
func Tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
