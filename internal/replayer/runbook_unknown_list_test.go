package replayer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
)

// Regression (found in review, twenty-first session): the command the
// runbook's "Unknown review" names shows the raw message whole.
// docs/runbook.md, "Unknown review": "Read their raw messages
// (`dlq-replayer list --class UNKNOWN`), promote recurring patterns to a
// named class in pkg/taxonomy". The on-call engineer runs exactly that
// command; the raw provider message (what the review is about) must be in
// its output. list's table clips the REASON column to 70 bytes, and the
// worker's reason starts with "agent <agent>: model <model>: ...", so the
// raw message is cut off after a few words (show prints it whole, and
// the replayer's own refusal text says to use show).
func TestRunbookUnknownReviewShowsRawMessage(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	doc, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "docs", "runbook.md"))
	if err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(string(doc)), " ")
	m := regexp.MustCompile("Read their raw messages \\(`dlq-replayer ([^`]+)`").FindStringSubmatch(flat)
	if m == nil {
		t.Fatal("the runbook's \"Unknown review\" no longer names a command for reading the raw messages: update this test")
	}
	args := strings.Fields(m[1])

	x := newFx(t, true)
	raw := "upstream said: grpc: received message larger than max (code=7311)"
	x.startWorker("w", agenttest.NewScriptedModel(agenttest.Fail(errors.New(raw))))
	x.submit(request("odd-1", "A-1001"))
	eventually(t, "the UNKNOWN failure is dead-lettered", 30*time.Second, func() bool { return len(x.dlqIDs()) == 1 })

	out := x.run(context.Background(), nil, args...).must(t, 0, "dlq-replayer "+m[1])
	if !strings.Contains(out.stdout, raw) {
		t.Errorf("runbook \"Unknown review\": `dlq-replayer %s` does not show the raw message %q; output:\n%s", m[1], raw, out.stdout)
	}
}
