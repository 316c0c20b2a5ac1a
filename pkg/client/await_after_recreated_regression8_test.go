package client_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// gatedJS is a JetStream whose results stream's look-ups by subject wait
// while gate is held: a look-up made while the stream is being deleted and
// created again finds it missing, which ends AwaitAfter (as it should).
type gatedJS struct {
	jetstream.JetStream
	results string
	gate    sync.RWMutex
}

func (j *gatedJS) Stream(ctx context.Context, name string) (jetstream.Stream, error) {
	s, err := j.JetStream.Stream(ctx, name)
	if err != nil || name != j.results {
		return s, err
	}
	return &gatedStream{Stream: s, js: j}, nil
}

type gatedStream struct {
	jetstream.Stream
	js *gatedJS
}

func (s *gatedStream) GetLastMsgForSubject(ctx context.Context, subject string) (*jetstream.RawStreamMsg, error) {
	s.js.gate.RLock()
	defer s.js.gate.RUnlock()
	return s.Stream.GetLastMsgForSubject(ctx, subject)
}

// recreateResults deletes tg's results stream and creates it again
// (streams.Ensure), until the new stream is empty: now and then the
// embedded server's new stream came back with the deleted one's last
// message (stored before it was deleted, at sequence 1), which makes the
// tests' premises about sequences fail.
func recreateResults(ctx context.Context, t *testing.T, tg streamstest.Target) {
	t.Helper()
	for range 10 {
		if err := tg.JS.DeleteStream(ctx, tg.Cfg.ResultsStream); err != nil {
			t.Fatal(err)
		}
		if _, err := streams.Ensure(ctx, tg.JS, tg.Cfg); err != nil {
			t.Fatal(err)
		}
		s, err := tg.JS.Stream(ctx, tg.Cfg.ResultsStream)
		if err != nil {
			t.Fatal(err)
		}
		if s.CachedInfo().State.LastSeq == 0 {
			return
		}
	}
	t.Fatal("the results stream, deleted and created again, is not empty")
}

// Regression (found in review, twenty-fifth session): Await's doc tells a
// producer holding a dead_lettered result to wait for the replay's with
// "AwaitAfter its sequence" (a replay may come days later), and AwaitSent
// does the same after a BAD_INPUT refusal. AwaitAfter counted only a
// stored result whose stream sequence was above afterSeq. When the results
// stream was deleted and created again meanwhile (an on-call fix, a
// storage change: streams.Ensure recreates it), its sequences start at 1
// again, so the newer result was stored with a lower sequence (or the same
// one) and AwaitAfter never returned it: the producer waited out its whole
// context for a result that was stored. A result with a lower sequence
// counts now, and one at the same sequence stored later than the earlier
// result (AwaitSent knows its time; AwaitAfter takes it from the first
// result it finds there).
func TestAwaitAfterSeesAResultOfARecreatedResultsStream(t *testing.T) {
	tg := streamstest.Embedded(t)
	// Its look-ups wait while the stream is recreated (seen in a CI run of
	// this session's fix: one made between the delete and the create,
	// while AwaitAfter waited, ended it with the stream not found).
	js := &gatedJS{JetStream: tg.JS, results: tg.Cfg.ResultsStream}
	c := newClientOn(t, tg, js, tg.NC)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	publish := func(inv string, st envelope.Status, class string) {
		t.Helper()
		publishResult(ctx, t, tg, &envelope.Result{InvocationID: inv, Status: st, ErrorClass: class})
	}
	recreate := func() {
		t.Helper()
		js.gate.Lock()
		defer js.gate.Unlock()
		recreateResults(ctx, t, tg)
	}
	lookup := func(id string, want envelope.Status) *client.StoredResult {
		t.Helper()
		s, err := c.Lookup(ctx, id)
		if err != nil || s.Status != want {
			t.Fatalf("premise: Lookup(%s) = %+v, %v; want %s", id, s, err, want)
		}
		return s
	}

	// A lower sequence: the replay's completed result is stored at 1, the
	// dead_lettered one was at 6.
	const id = "review8-recreated"
	for i := range 5 { // other invocations' results: the stream is not new
		publish(fmt.Sprintf("other-%d", i), envelope.StatusCompleted, "")
	}
	publish(id, envelope.StatusDeadLettered, "")
	before := lookup(id, envelope.StatusDeadLettered)
	recreate()
	publish(id, envelope.StatusCompleted, "")
	lookup(id, envelope.StatusCompleted)
	actx, acancel := context.WithTimeout(ctx, 8*time.Second)
	defer acancel()
	res, err := c.AwaitAfter(actx, id, before.Seq)
	if err != nil || res.Status != envelope.StatusCompleted {
		t.Fatalf("AwaitAfter(%d) with the replay's completed result stored (the results stream recreated since) = %+v, %v; "+
			"want the completed result", before.Seq, res, err)
	}

	// The same sequence, known to AwaitSent by the refusal's time: the
	// refusal was the stream's first message, and so is the resubmission's
	// result in the recreated stream.
	recreate()
	const refused = "review8-recreated-refused"
	publish(refused, envelope.StatusFailed, badInput)
	before = lookup(refused, envelope.StatusFailed)
	recreate()
	publish(refused, envelope.StatusCompleted, "")
	if now := lookup(refused, envelope.StatusCompleted); now.Seq != before.Seq {
		t.Fatalf("premise: the completed result is at %d, the refusal was at %d", now.Seq, before.Seq)
	}
	sctx, scancel := context.WithTimeout(ctx, 8*time.Second)
	defer scancel()
	res, err = c.AwaitSent(sctx, &client.Receipt{InvocationID: refused, Stream: tg.Cfg.RequestsStream, Sequence: 1}, before)
	if err != nil || res.Status != envelope.StatusCompleted {
		t.Fatalf("AwaitSent after a refusal at %d with the resubmission's completed result stored at the same sequence of "+
			"the recreated results stream = %+v, %v; want the completed result", before.Seq, res, err)
	}

	// The same sequence, recreated while AwaitAfter waits: the first
	// result it finds at afterSeq is the earlier one.
	recreate()
	const waited = "review8-recreated-waited"
	publish(waited, envelope.StatusDeadLettered, "")
	before = lookup(waited, envelope.StatusDeadLettered)
	done, early, ok := startAwait(ctx, t, c, 8*time.Second, func(wctx context.Context) (*envelope.Result, error) {
		return c.AwaitAfter(wctx, waited, before.Seq)
	})
	if !ok {
		t.Fatalf("AwaitAfter(%d) returned %+v, %v before anything newer was stored", before.Seq, early.res, early.err)
	}
	recreate()
	publish(waited, envelope.StatusCompleted, "")
	if now := lookup(waited, envelope.StatusCompleted); now.Seq != before.Seq {
		t.Fatalf("premise: the completed result is at %d, the dead_lettered one was at %d", now.Seq, before.Seq)
	}
	if a := <-done; a.err != nil || a.res.Status != envelope.StatusCompleted {
		t.Fatalf("AwaitAfter(%d) waiting while the results stream was recreated and the completed result stored at the "+
			"same sequence = %+v, %v; want the completed result", before.Seq, a.res, a.err)
	}
}

// publishResult stores r in tg's results stream.
func publishResult(ctx context.Context, t *testing.T, tg streamstest.Target, r *envelope.Result) {
	t.Helper()
	data, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tg.JS.Publish(ctx, envelope.ResultSubject(tg.Cfg.ResultPrefix, r.InvocationID), data); err != nil {
		t.Fatal(err)
	}
}

// awaitAnswer is what an Await call returned.
type awaitAnswer struct {
	res *envelope.Result
	err error
}

// startAwait runs await (AwaitAfter, AwaitSent) on c in a goroutine, with
// a context that ends after d, and returns the channel its answer comes on
// once it waits (c's waiting hook: its first look-up was answered). If it
// returned before it waited, waited is false and early is its answer.
func startAwait(ctx context.Context, t *testing.T, c *client.Client, d time.Duration,
	await func(ctx context.Context) (*envelope.Result, error)) (done <-chan awaitAnswer, early awaitAnswer, waited bool) {
	t.Helper()
	waiting := make(chan string, 1)
	client.SetWaitingHook(c, func(id string) { waiting <- id })
	actx, acancel := context.WithTimeout(ctx, d)
	t.Cleanup(acancel)
	answers := make(chan awaitAnswer, 1)
	go func() {
		res, err := await(actx)
		answers <- awaitAnswer{res, err}
	}()
	select {
	case <-waiting:
		return answers, awaitAnswer{}, true
	case a := <-answers:
		return answers, a, false
	}
}
