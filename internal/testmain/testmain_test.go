package testmain

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	Dispatch()
	os.Exit(m.Run())
}

// child runs this test binary with args and the environment minus EnvVar,
// plus extra; it returns the exit code and the output.
func child(t *testing.T, args []string, extra ...string) (int, string) {
	t.Helper()
	self, err := Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, EnvVar+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, extra...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	}
	t.Fatal(err)
	return 0, ""
}

func TestChildWithoutTheVariableRunsNoTests(t *testing.T) {
	for _, args := range [][]string{{"replay", "--nats-url", "nats://127.0.0.1:1", "--yes"}, {"--name", "w1"}} {
		code, out := child(t, args)
		if code != 2 || !strings.Contains(out, "not running the tests") || strings.Contains(out, "PASS") {
			t.Errorf("%q: exit %d, output:\n%s\nwant exit 2, a refusal and no test run", args, code, out)
		}
	}
}

func TestUnknownCommandExits2(t *testing.T) {
	code, out := child(t, []string{"--help"}, EnvVar+"=nope")
	if code != 2 || !strings.Contains(out, "names no command") {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
}

func TestCommandsRun(t *testing.T) {
	code, out := child(t, []string{"--help"}, Env(Worker))
	if code != 0 || !strings.Contains(out, "-demo N") {
		t.Errorf("worker --help: exit %d, output:\n%s", code, out)
	}
	code, out = child(t, []string{"no-such-subcommand"}, Env(Replayer))
	if code == 0 || strings.Contains(out, "PASS") || !strings.Contains(strings.ToLower(out), "no-such-subcommand") {
		t.Errorf("dlq-replayer no-such-subcommand: exit %d, output:\n%s", code, out)
	}
}
