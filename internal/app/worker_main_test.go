package app

import (
	"bytes"
	"strings"
	"testing"
)

func TestWorkerMainExitCodes(t *testing.T) {
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := WorkerMain(tc.args, &out, &errOut); code != tc.code {
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
