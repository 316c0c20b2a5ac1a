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

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/producercli"
	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// Regression (found in review, twenty-third session): RunBatch handed
// lines to its Concurrency slots in file order and held each slot until its
// line's result, so a run of one session's lines (which the fleet runs one
// at a time) filled every slot and no other session's line was submitted
// until fewer than Concurrency of them were left.
//
// Seen with `producer batch --concurrency 64` against two real workers: 300
// lines of one session then 1,400 of others: none of the 1,400 started for
// 17 s, and the fleet sat mostly idle; 200 lines of one session at
// --timeout 60s: 16 lines timed out on a healthy, idle fleet. RunBatch now
// keeps at most one line per (agent, user, session) in flight.
//
// Here the hot session's running invocation is held (a model call that
// does not return until the test lets it): the line of another session
// must still be submitted and complete meanwhile.
func TestBatchHotSessionDoesNotHoldTheOtherSessionsLines(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	js, nc, _ := natstest.JetStream(t)
	sc := streams.Config{WorkerAckWait: 5 * time.Second}.WithDefaults()
	if _, err := streams.Ensure(ctx, js, sc); err != nil {
		t.Fatal(err)
	}

	release := make(chan struct{})
	var releaseOnce sync.Once
	letGo := func() { releaseOnce.Do(func() { close(release) }) }
	defer letGo()
	held := make(chan struct{}, 16)
	m := model.Func{ModelName: "test", Generate: func(ctx context.Context, req *model.Request, _ bool) iter.Seq2[*model.Response, error] {
		return func(yield func(*model.Response, error) bool) {
			if strings.Contains(lastUserText(req), "hold") {
				held <- struct{}{}
				select {
				case <-release:
				case <-ctx.Done():
					yield(nil, ctx.Err())
					return
				}
			}
			yield(agenttest.Text("done"), nil)
		}
	}}
	sessions := session.NewMemory()
	w, err := worker.New(context.Background(), worker.Config{
		Name: "w-hot", Concurrency: 8, FetchWait: 100 * time.Millisecond, BusyDelay: 50 * time.Millisecond,
		InfraBackoffMax: 100 * time.Millisecond, AckWait: sc.WorkerAckWait,
	}, worker.Deps{
		JS: js, Streams: sc,
		Agents:      map[string]*agent.Runner{"support": {Agent: &agent.Agent{Name: "support", Model: m, MaxModelCalls: 3}, Sessions: sessions}},
		Locker:      session.NewMemoryLocker(),
		Invocations: session.NewMemoryInvocations(time.Hour),
		DLQ:         dlq.NewPublisher(js, dlq.Config{Stream: sc.DLQStream, Prefix: sc.DLQPrefix}),
		Logger:      zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel),
	})
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { _ = w.Run(wctx); close(stopped) }()
	defer func() { letGo(); wcancel(); <-stopped }()

	c, err := client.New(js, nc, producercli.ClientConfig(sc))
	if err != nil {
		t.Fatal(err)
	}
	const slots = 4
	var file strings.Builder
	for i := 1; i <= slots; i++ {
		fmt.Fprintf(&file, `{"invocation_id":"hot-%d","agent":"support","user_id":"u-hot","session_id":"s-hot","text":"hold turn %d"}`+"\n", i, i)
	}
	file.WriteString(`{"invocation_id":"other-1","agent":"support","user_id":"u-other","session_id":"s-other","text":"quick question"}` + "\n")
	lines, err := producercli.ParseBatch(strings.NewReader(file.String()))
	if err != nil || len(lines) != slots+1 {
		t.Fatalf("test premise: %d lines, %v", len(lines), err)
	}

	type batchRun struct {
		results []producercli.LineResult
		err     error
	}
	done := make(chan batchRun, 1)
	go func() {
		res, err := producercli.RunBatch(ctx, c, lines, producercli.BatchOptions{Concurrency: slots, Timeout: 45 * time.Second})
		done <- batchRun{res, err}
	}()

	// The hot session's first invocation is running (and held).
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("test premise: no invocation of the hot session ran")
	}
	// The other session's line is free to run: the fleet has idle slots.
	actx, acancel := context.WithTimeout(ctx, 10*time.Second)
	res, err := c.Await(actx, "other-1")
	acancel()
	if err != nil {
		t.Errorf("the other session's line got no result while one invocation of the hot session ran "+
			"(the batch's %d slots all held lines of the hot session, which the fleet runs one at a time): %v", slots, err)
	} else if res.Status != "completed" {
		t.Errorf("the other session's line: %s %s", res.Status, res.ErrorClass)
	}

	letGo()
	var br batchRun
	select {
	case br = <-done:
	case <-ctx.Done():
		t.Fatal("the batch did not finish after the hot session was let go")
	}
	if br.err != nil {
		t.Fatal(br.err)
	}
	for _, r := range br.results {
		if r.Outcome != producercli.OutcomeCompleted {
			t.Errorf("line %d (%s): %s %v", r.Line, r.InvocationID, r.Outcome, r.Err)
		}
	}
}

// lastUserText is the text of the latest user message of req.
func lastUserText(req *model.Request) string {
	if req == nil {
		return ""
	}
	for i := len(req.Contents) - 1; i >= 0; i-- {
		if c := req.Contents[i]; c != nil && c.Role == model.RoleUser && c.Text() != "" {
			return c.Text()
		}
	}
	return ""
}
