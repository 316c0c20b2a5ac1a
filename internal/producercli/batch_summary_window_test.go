package producercli_test

import (
	"bytes"
	"context"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/producercli"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// Regression (found in review, twentieth session): the fleet's requests
// duplicate window is configurable (streams.duplicate_window in
// configs/worker.yaml). A batch rerun of a line refused as BAD_INPUT,
// inside that window, is dropped by the server, and the summary told the
// user to "run the batch again once the window (10 minutes) has passed": a
// constant, whatever the stream's window is. With a one-hour window the
// user reran after ten minutes, was dropped again, and was told "10
// minutes" again. Correct: the summary names the stream's own window
// (AGENT_REQUESTS' Duplicates), or no number at all.
func TestBatchSummaryNamesTheStreamsOwnDuplicateWindow(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := model.Func{ModelName: "test", Generate: func(context.Context, *model.Request, bool) iter.Seq2[*model.Response, error] {
		return func(yield func(*model.Response, error) bool) { yield(agenttest.Text("done"), nil) }
	}}
	f := newBadInputFleet(t, ctx, time.Hour, done) // the default stream names, a one-hour window
	f.startWorker("support")                       // "billing" is not deployed: BAD_INPUT

	file := filepath.Join(t.TempDir(), "requests.jsonl")
	line := `{"invocation_id":"ticket-9","agent":"billing","user_id":"u1","session_id":"s1","text":"Why was I charged twice?"}` + "\n"
	if err := os.WriteFile(file, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func() (int, string) {
		var out, errb bytes.Buffer
		env := producercli.Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
		code := producercli.Run(ctx, []string{"--nats-url", f.srv.ClientURL(), "--timeout", "15s", "batch", "--file", file}, env)
		return code, out.String()
	}
	if code, out := run(); code != producercli.ExitNotCompleted || !strings.Contains(out, "BAD_INPUT") {
		t.Fatalf("test premise: first run exit %d, want 4 with a BAD_INPUT refusal:\n%s", code, out)
	}
	_, out := run() // inside the one-hour window: the resend is dropped
	if !strings.Contains(out, "duplicate window") {
		t.Fatalf("test premise: the rerun's summary does not speak of the duplicate window:\n%s", out)
	}
	if strings.Contains(out, "10 minutes") || !strings.Contains(out, "(1h)") {
		t.Fatalf("the summary does not name the requests stream's duplicate window, 1h:\n%s", out)
	}
}

// Regression (found in review, twentieth session): when the requests
// stream's duplicate window is unknown (it could not be read), the summary
// names no duration rather than the default's "10 minutes".
func TestBatchSummaryWithoutTheWindowNamesNoDuration(t *testing.T) {
	dropped := []producercli.LineResult{{Line: 1, InvocationID: "ticket-9", Outcome: producercli.OutcomeFailed,
		Class: "BAD_INPUT", Submitted: true, Duplicate: true, Earlier: true}}
	var buf bytes.Buffer
	producercli.WriteSummary(&buf, dropped)
	if out := buf.String(); !strings.Contains(out, "once the requests stream's duplicate window has passed") || strings.Contains(out, "10 minutes") {
		t.Fatalf("summary with the window unknown:\n%s", out)
	}
	buf.Reset()
	producercli.WriteSummaryWindow(&buf, dropped, 90*time.Minute)
	if out := buf.String(); !strings.Contains(out, "once the window (1h30m) has passed") {
		t.Fatalf("summary with a 90-minute window:\n%s", out)
	}
}
