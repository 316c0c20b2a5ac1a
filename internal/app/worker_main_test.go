package app

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestWorkerMainExitCodes(t *testing.T) {
	// The model cases start an embedded server first: on a free port, and
	// with no key in the environment whatever the machine has.
	t.Setenv("AGENTFLEET_EMBEDDED_PORT", "-1")
	t.Setenv("GEMINI_API_KEY", "")
	t.Setenv("GOOGLE_API_KEY", "")
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"help", []string{"--help"}, 0, "-demo N"},
		{"demo without a number", []string{"--demo"}, 2, "--demo needs a number"},
		{"demo not a number", []string{"--demo=many"}, 2, `--demo "many": want a positive number`},
		{"demo zero", []string{"--demo", "0"}, 2, "want a positive number"},
		{"unknown flag", []string{"--no-such-flag"}, 2, "no-such-flag"},
		// A model the environment cannot serve is bad configuration too
		// (it exited 1, after the embedded server had started).
		{"gemini without a key", []string{"--model", "gemini:gemini-2.5-flash", "--embedded", "--data-dir", "@tmp"}, 2, "GEMINI_API_KEY"},
		{"unknown model spec", []string{"--model", "claude", "--embedded", "--data-dir", "@tmp"}, 2, "model.spec"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			args := slices.Clone(tc.args)
			for i, a := range args {
				if a == "@tmp" {
					args[i] = t.TempDir()
				}
			}
			if code := WorkerMain(args, &out, &errOut); code != tc.code {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tc.code, errOut.String())
			}
			if !strings.Contains(errOut.String(), tc.stderr) {
				t.Errorf("stderr %q does not contain %q", errOut.String(), tc.stderr)
			}
		})
	}
}

func TestWorkerMainDemo(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := WorkerMain([]string{"--demo", "3", "--data-dir", t.TempDir()}, &out, &errOut); code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "duplicated effects: 0") {
		t.Errorf("demo summary missing:\n%s", out.String())
	}
}
