package producercli_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/producercli"
	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/client"
)

// Regression (found in review, twenty-fourth session): a results max age
// shorter than the requests' duplicate window turned a completed batch
// line into a timeout on every rerun. streams.results_max_age and
// streams.duplicate_window were set independently, and nothing refused
// a results max age shorter than the requests' duplicate window (a fleet
// that keeps results briefly because producers await them live, or one
// that widened the window for slow producer retries). A batch rerun of a
// completed line whose result has aged out, while its id is still in the
// requests' duplicate window, then finds no stored result, sends the line
// again, is dropped by the server as a duplicate (no worker ever sees it,
// so nobody re-publishes the answer from the invocation record), and
// waits out --timeout: the line is reported "timeout" (exit 4) though the
// invocation completed; every rerun does the same until the window ends.
// (Here: a 1 s results max age, a one-hour window; a real worker.)
// Either the configuration is refused up front (it is now: streams.Config
// Validate, which the worker runs at start, and Ensure), or the rerun does
// not report a completed invocation as a timeout.
func TestBatchRerunAfterTheResultAgedOutIsNotATimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sc := streams.Config{RequestDuplicates: time.Hour, ResultsMaxAge: time.Second, WorkerAckWait: 5 * time.Second}.WithDefaults()
	if err := sc.Validate(); err != nil {
		// Refused up front: fixed, if by the rule meant.
		var ce *streams.ConfigError
		if !errors.As(err, &ce) || ce.Field != "ResultsMaxAge" || !strings.Contains(ce.Reason, "duplicate window") {
			t.Fatalf("refused for another reason: %v", err)
		}
		return
	}
	js, nc, srv := natstest.JetStream(t)
	if _, err := streams.Ensure(ctx, js, sc); err != nil {
		t.Fatal(err)
	}
	done := model.Func{ModelName: "test", Generate: func(context.Context, *model.Request, bool) iter.Seq2[*model.Response, error] {
		return func(yield func(*model.Response, error) bool) { yield(agenttest.Text("done"), nil) }
	}}
	f := &badInputFleet{t: t, js: js, nc: nc, srv: srv, sc: sc, m: done,
		sessions: session.NewMemory(), locker: session.NewMemoryLocker(), invs: session.NewMemoryInvocations(time.Hour)}
	f.startWorker("support")
	c := f.client()
	lines, err := producercli.ParseBatch(strings.NewReader(
		`{"invocation_id":"ticket-11","agent":"support","user_id":"u1","session_id":"s1","text":"Where is my parcel?"}` + "\n"))
	if err != nil || len(lines) != 1 || lines[0].Err != nil {
		t.Fatalf("test premise: %+v %v", lines, err)
	}
	opts := producercli.BatchOptions{Concurrency: 1, Timeout: 3 * time.Second}
	first, err := producercli.RunBatch(ctx, c, lines, opts)
	if err != nil || first[0].Outcome != producercli.OutcomeCompleted {
		t.Fatalf("test premise: first run %+v, %v", first, err)
	}
	// The result ages out of AGENT_RESULTS (its max age), the request's id
	// is still in AGENT_REQUESTS' duplicate window.
	for {
		_, err := c.Lookup(ctx, "ticket-11")
		if errors.Is(err, client.ErrNoResult) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("test premise: the result never aged out: %v", err)
		}
		time.Sleep(100 * time.Millisecond) // poll for the stream's max age to remove it
	}
	second, err := producercli.RunBatch(ctx, c, lines, opts)
	if err != nil {
		t.Fatal(err)
	}
	if r := second[0]; r.Outcome == producercli.OutcomeTimeout {
		t.Fatalf("rerun of a line that completed: %s (submitted %v, deduplicated by the server %v): %v; "+
			"its result aged out (results max age %v) inside the requests' duplicate window (%v), the resend was dropped "+
			"and no answer can come: a completed invocation is reported as a timeout",
			r.Outcome, r.Submitted, r.Duplicate, r.Err, sc.ResultsMaxAge, sc.RequestDuplicates)
	}
}
