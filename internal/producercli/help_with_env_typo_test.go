package producercli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Regression (found in review, twentieth session): `producer help` and
// `producer --help` print the usage with a misspelt
// AGENTFLEET_ variable in the environment (as the worker's and the
// replayer's -h do); a subcommand's --help was refused with exit 2 instead.
// Now it prints the subcommand's help.
func TestSubcommandHelpWithATypoInTheEnvironment(t *testing.T) {
	vars := []string{"AGENTFLEET_NATSURL=nats://fleet:4222"}
	for _, args := range [][]string{{"help"}, {"--help"}, {"send", "--help"}, {"await", "-h"}, {"batch", "--help"}} {
		var out, errb bytes.Buffer
		e := Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }, Environ: func() []string { return vars }}
		if code := Run(context.Background(), args, e); code != ExitOK {
			t.Errorf("producer %s with AGENTFLEET_NATSURL set: exit %d, want %d (help)\n%s", strings.Join(args, " "), code, ExitOK, errb.String())
		}
	}
}
