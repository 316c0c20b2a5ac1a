package producercli_test

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/internal/producercli"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// turnOrderModel records, per session, the turns ("sX turn N ...") in
// the order the model saw them.
func turnOrderModel() (model.Model, func(s string) []int) {
	var mu sync.Mutex
	ran := map[string][]int{}
	m := model.Func{ModelName: "test", Generate: func(ctx context.Context, req *model.Request, _ bool) iter.Seq2[*model.Response, error] {
		return func(yield func(*model.Response, error) bool) {
			var s string
			var turn int
			if _, err := fmt.Sscanf(lastUserText(req), "%s turn %d", &s, &turn); err == nil {
				mu.Lock()
				ran[s] = append(ran[s], turn)
				mu.Unlock()
			}
			yield(agenttest.Text("noted"), nil)
		}
	}}
	return m, func(s string) []int {
		mu.Lock()
		defer mu.Unlock()
		return append([]int(nil), ran[s]...)
	}
}

// startSizeLimitedWorker is badInputFleet.startWorker with a request size
// limit (the worker's streams.max_request_bytes).
func startSizeLimitedWorker(f *badInputFleet, maxRequestBytes int, agents ...string) context.CancelFunc {
	t := f.t
	t.Helper()
	runners := map[string]*agent.Runner{}
	for _, name := range agents {
		runners[name] = &agent.Runner{Agent: &agent.Agent{Name: name, Model: f.m, MaxModelCalls: 3}, Sessions: f.sessions}
	}
	w, err := worker.New(context.Background(), worker.Config{
		Name: "w-review7d", FetchWait: 100 * time.Millisecond, BusyDelay: 50 * time.Millisecond,
		InfraBackoffMax: 100 * time.Millisecond, AckWait: f.sc.WorkerAckWait, MaxRequestBytes: maxRequestBytes,
	}, worker.Deps{
		JS: f.js, Streams: f.sc, Agents: runners, Locker: f.locker, Invocations: f.invs,
		DLQ:    dlq.NewPublisher(f.js, dlq.Config{Stream: f.sc.DLQStream, Prefix: f.sc.DLQPrefix}),
		Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel),
	})
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { _ = w.Run(wctx); close(stopped) }()
	var once sync.Once
	stop := func() { once.Do(func() { wcancel(); <-stopped }) }
	t.Cleanup(stop)
	return stop
}

// Regression (found in review of this session's fix, twenty-fourth session):
// a line the worker refuses as BAD_INPUT has a result, but not a final one
// (client.StoredResult.Final is false): RunBatch itself sends it again on
// the rerun that the runbook prescribes ("fix it; the producer sends it
// again"), and then it runs. Its session's later lines are not held, so
// they run first: the conversation's turn 2 is answered without turn 1,
// and the rerun then runs turn 1 after turn 2 - exactly what OutcomeHeld
// exists to prevent ("it may still be queued, or will be sent again by a
// rerun"). Here the refusal is the worker's size limit (max_request_bytes
// lower than the client's), which the operator then raises.
func TestBatchBadInputRefusalHoldsItsSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m, seen := turnOrderModel()
	f := newBadInputFleet(t, ctx, 200*time.Millisecond, m)
	c := f.client()
	pad := strings.Repeat("x", 3000)
	lines, err := producercli.ParseBatch(strings.NewReader(
		`{"agent":"support","user_id":"u1","session_id":"s1","text":"s1 turn 1 ` + pad + `"}` + "\n" +
			`{"agent":"support","user_id":"u1","session_id":"s1","text":"s1 turn 2"}` + "\n"))
	if err != nil || len(lines) != 2 || lines[0].Err != nil || lines[1].Err != nil {
		t.Fatalf("test premise: %+v %v", lines, err)
	}
	opts := producercli.BatchOptions{Concurrency: 2, Timeout: 15 * time.Second}

	stop := startSizeLimitedWorker(f, 1024, "support") // refuses line 1 as BAD_INPUT
	first, err := producercli.RunBatch(ctx, c, lines, opts)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if first[0].Outcome != producercli.OutcomeFailed || first[0].Class != "BAD_INPUT" {
		t.Fatalf("test premise: line 1 %+v, want failed BAD_INPUT", first[0])
	}

	// The limit is raised; the window has passed; the file is run again.
	startSizeLimitedWorker(f, 0, "support")
	outliveDuplicateWindow(f.sc)
	second, err := producercli.RunBatch(ctx, c, lines, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first run: line 2 %s (submitted %v); rerun: line 1 %s, line 2 %s; the model saw s1's turns %v",
		first[1].Outcome, first[1].Submitted, second[0].Outcome, second[1].Outcome, seen("s1"))
	if first[1].Submitted || first[1].Outcome != producercli.OutcomeHeld {
		t.Errorf("line 2 was %s (submitted %v) while line 1 of its session, refused as BAD_INPUT, is sent again by the rerun: "+
			"want %s; the model saw s1's turns in the order %v", first[1].Outcome, first[1].Submitted, producercli.OutcomeHeld, seen("s1"))
	}
	if got := fmt.Sprint(seen("s1")); got != "[1 2]" {
		t.Errorf("the model saw s1's turns %s, want [1 2]", got)
	}
}

// Regression (found in review of this session's fix, twenty-fourth session):
// an invalid line was not sent, yet its session's later lines were: a line
// whose id repeats another session's line (a copy-paste) is refused, and
// the next turn of its session runs without it. Once the user gives it its
// own id and runs the file again (what the refusal says to do), turn 1
// runs after turn 2. RunBatch holds the session after an invalid line
// found at send time (the size with headers), not after one found before.
func TestBatchConflictingIDLineHoldsItsSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m, seen := turnOrderModel()
	f := newBadInputFleet(t, ctx, time.Hour, m)
	c := f.client()
	startSizeLimitedWorker(f, 0, "support")
	file := func(secondID string) []producercli.Line {
		lines, err := producercli.ParseBatch(strings.NewReader(
			`{"invocation_id":"t-1","agent":"support","user_id":"uA","session_id":"sA","text":"sA turn 1"}` + "\n" +
				`{"invocation_id":"` + secondID + `","agent":"support","user_id":"uB","session_id":"sB","text":"sB turn 1"}` + "\n" +
				`{"invocation_id":"t-2","agent":"support","user_id":"uB","session_id":"sB","text":"sB turn 2"}` + "\n"))
		if err != nil || len(lines) != 3 {
			t.Fatalf("test premise: %+v %v", lines, err)
		}
		return lines
	}
	opts := producercli.BatchOptions{Concurrency: 2, Timeout: 15 * time.Second}
	first, err := producercli.RunBatch(ctx, c, file("t-1"), opts)
	if err != nil {
		t.Fatal(err)
	}
	if first[1].Outcome != producercli.OutcomeInvalid {
		t.Fatalf("test premise: line 2 %+v, want invalid", first[1])
	}
	if _, err := producercli.RunBatch(ctx, c, file("t-3"), opts); err != nil {
		t.Fatal(err)
	}
	if first[2].Submitted || first[2].Outcome != producercli.OutcomeHeld {
		t.Errorf("line 3 (sB turn 2) was %s (submitted %v) after line 2 (sB turn 1) was refused unsent; "+
			"after the fix and rerun the model saw sB's turns %v, want %s and [1 2]",
			first[2].Outcome, first[2].Submitted, seen("sB"), producercli.OutcomeHeld)
	}
}
