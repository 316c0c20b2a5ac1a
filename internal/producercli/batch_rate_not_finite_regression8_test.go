package producercli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentfleet/agentfleet/internal/producercli"
)

// Regression (found in review, twenty-fifth session): `producer batch
// --rate NaN` (and +Inf) passed the check "--rate >= 0" (NaN < 0 is false)
// and ran the batch unthrottled. A rate that is not a finite number >= 0 is
// a usage error (exit 2), refused before connecting; 0 still asks for no
// limit.
func TestBatchRefusesANonFiniteRate(t *testing.T) {
	file := filepath.Join(t.TempDir(), "requests.jsonl")
	if err := os.WriteFile(file, []byte(`{"agent":"support","user_id":"u1","session_id":"s1","text":"hi"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(rate string) (int, string) {
		var out, errb bytes.Buffer
		env := producercli.Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
		// Nothing listens there: a rate that is accepted fails to connect (exit 1).
		code := producercli.Run(context.Background(), []string{"--nats-url", "nats://127.0.0.1:1",
			"batch", "--file", file, "--rate", rate}, env)
		return code, errb.String()
	}
	for _, rate := range []string{"NaN", "nan", "Inf", "+Inf", "-Inf", "infinity", "-1"} {
		if code, stderr := run(rate); code != producercli.ExitUsage {
			t.Errorf("batch --rate %s: exit %d, want %d (usage)\n%s", rate, code, producercli.ExitUsage, stderr)
		}
	}
	for _, rate := range []string{"0", "2.5"} {
		if code, stderr := run(rate); code == producercli.ExitUsage {
			t.Errorf("batch --rate %s refused as a usage error:\n%s", rate, stderr)
		}
	}
}
