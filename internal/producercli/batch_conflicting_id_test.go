package producercli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/producercli"
	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/client/clienttest"
)

// Two lines of a batch file that give the same explicit invocation id to
// two different requests: only the first can ever run (the stream's
// duplicate window drops the second unseen). The second was reported as a
// skipped duplicate and the batch exited 0 ("every result completed");
// it is now invalid, with a reason, and the batch exits 4. A repeat of the
// same request under the same id stays a skipped duplicate
// (TestRunBatch*).
func TestBatchConflictingLineWithSameIDIsInvalid(t *testing.T) {
	tg := streamstest.Embedded(t)
	w := clienttest.Start(t, tg.JS, tg.Cfg, clienttest.Echo)
	url := tg.NC.ConnectedUrl()
	file := filepath.Join(t.TempDir(), "requests.jsonl")
	content := `{"invocation_id":"order-1","agent":"support","user_id":"u1","session_id":"s1","text":"refund order A-1"}
{"invocation_id":"order-1","agent":"support","user_id":"u2","session_id":"s2","text":"cancel order B-2"}
`
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	env := producercli.Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	code := producercli.Run(ctx, []string{"--nats-url", url, "--timeout", "10s", "batch", "--file", file, "--rate", "0"}, env)
	runs := w.Runs()
	t.Logf("stdout:\n%s\nstderr:\n%s\nworker runs: %v", out.String(), errb.String(), runs)
	if len(runs) != 1 {
		t.Fatalf("test premise: worker ran %v, want only the first line", runs)
	}
	if code == producercli.ExitOK {
		t.Fatalf("batch exit %d (success) although line 2's request (a different request under line 1's id) was never sent", code)
	}
	if code != producercli.ExitNotCompleted {
		t.Fatalf("batch exit %d, want %d (a line did not complete)", code, producercli.ExitNotCompleted)
	}
	if strings.Contains(out.String(), "skipped (duplicate line)") {
		t.Fatalf("a different request under a reused id is reported as a skipped duplicate:\n%s", out.String())
	}
	if !strings.Contains(out.String()+errb.String(), "is line 1's, for a different request") {
		t.Fatalf("no reason names line 1:\n%s\n%s", out.String(), errb.String())
	}
}
