package worker_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// failingJS fails the next publish on a result subject once armed.
type failingJS struct {
	jetstream.JetStream
	armed atomic.Bool
	pfx   string
}

func (f *failingJS) Publish(ctx context.Context, subj string, data []byte, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	if strings.HasPrefix(subj, f.pfx) && f.armed.CompareAndSwap(true, false) {
		return nil, errors.New("injected: nats: timeout")
	}
	return f.JetStream.Publish(ctx, subj, data, opts...)
}

// A replay completes, its record is written, and its result publish fails.
// The redelivery finds the completed record and must publish the completed
// result even though the stream already holds a result of the invocation
// (the dead_lettered one the replay followed). A further duplicate delivery
// publishes nothing more: the stored result is already the record's.
func TestReplayResultRepublishedAfterAFailedPublish(t *testing.T) {
	e := newEnv(t)
	fj := &failingJS{pfx: e.sc.ResultSubject("")}
	e.deps = func(d *worker.Deps) { fj.JetStream = d.JS; d.JS = fj }
	call := func() agenttest.Step {
		return agenttest.Reply(agenttest.Call("get_order", map[string]any{"order_id": "A-1042"}))
	}
	llm := agenttest.NewScriptedModel(call(), call(), agenttest.Reply(agenttest.Text("fixed")))
	ag := e.supportAgent(llm)
	ag.MaxModelCalls = 2
	w := e.startWorker("w1", ag, worker.Config{})
	e.publish(request("inv-rp", "s1", "loop"), nil)
	if res := e.await("inv-rp"); res.Status != envelope.StatusDeadLettered {
		t.Fatalf("first run: %+v", res)
	}
	fj.armed.Store(true)
	e.publishRaw(e.sc.RequestSubject("support"), mustJSON(t, request("inv-rp", "s1", "loop")), "replay:inv-rp:1",
		map[string]string{envelope.HeaderReplayCount: "1", envelope.HeaderResume: "true", envelope.HeaderFreshBudget: "true"})
	if res := e.await("inv-rp"); res.Status != envelope.StatusCompleted || res.Content != "fixed" {
		t.Fatalf("after the failed publish: %+v", res)
	}
	eventually(t, "redelivery acked as duplicate", func() bool { return w.count("support", "duplicate") == 1 })
	ctx := context.Background()
	s, err := e.js.Stream(ctx, e.sc.ResultsStream)
	if err != nil {
		t.Fatal(err)
	}
	last, err := s.GetLastMsgForSubject(ctx, e.sc.ResultSubject("inv-rp"))
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := envelope.DecodeResult(last.Data); r == nil || r.Status != envelope.StatusCompleted {
		t.Fatalf("last stored result = %s, want the completed one", last.Data)
	}
	// One more duplicate: nothing new is published.
	e.publishRaw(e.sc.RequestSubject("support"), mustJSON(t, request("inv-rp", "s1", "loop")), "inv-rp-late", nil)
	eventually(t, "late duplicate acked", func() bool { return w.count("support", "duplicate") == 2 })
	again, err := s.GetLastMsgForSubject(ctx, e.sc.ResultSubject("inv-rp"))
	if err != nil || again.Sequence != last.Sequence {
		t.Fatalf("a duplicate of a completed invocation re-published its result (seq %d, was %d): %v", again.Sequence, last.Sequence, err)
	}
	if llm.Calls() != 3 {
		t.Fatalf("model calls = %d, want 3", llm.Calls())
	}
}

// holdingJS holds the first result publish until release is closed.
type holdingJS struct {
	jetstream.JetStream
	pfx     string
	held    atomic.Bool
	waiting chan struct{} // closed when the first result publish is held
	release chan struct{}
}

func (h *holdingJS) Publish(ctx context.Context, subj string, data []byte, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	if strings.HasPrefix(subj, h.pfx) && h.held.CompareAndSwap(false, true) {
		close(h.waiting)
		<-h.release
	}
	return h.JetStream.Publish(ctx, subj, data, opts...)
}

// A completed invocation's lock is released with its record, before its
// result is published. A duplicate of the request that arrives in between
// finds the completed record and publishes the record's result itself; the
// first worker's publish that follows is the same result with the same
// Nats-Msg-Id, so the stream stores one (review finding: two results).
func TestResultPublishedOnceWhenADuplicateOvertakesIt(t *testing.T) {
	e := newEnv(t)
	h := &holdingJS{pfx: e.sc.ResultSubject(""), waiting: make(chan struct{}), release: make(chan struct{})}
	e.deps = func(d *worker.Deps) { h.JetStream = d.JS; d.JS = h }
	w := e.startWorker("w1", e.supportAgent(agenttest.NewScriptedModel(agenttest.Reply(agenttest.Text("done")))), worker.Config{Concurrency: 2})
	e.publish(request("inv-dup", "s1", "hi"), nil)
	<-h.waiting // recorded, lock released, the result publish held
	e.publishRaw(e.sc.RequestSubject("support"), mustJSON(t, request("inv-dup", "s1", "hi")), "again-inv-dup", nil)
	eventually(t, "duplicate acked", func() bool { return w.count("support", "duplicate") == 1 })
	close(h.release)
	eventually(t, "completion acked", func() bool { return w.count("support", "completed") == 1 })
	ctx := context.Background()
	s, err := e.js.Stream(ctx, e.sc.ResultsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(e.sc.ResultSubject("inv-dup")))
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 || info.State.LastSeq != 1 {
		t.Fatalf("results stream: %d messages, last seq %d; want the one result published once", info.State.Msgs, info.State.LastSeq)
	}
}

// A model's text with invalid UTF-8 is stored and published as the same
// bytes (U+FFFD in place of the bad byte), so a duplicate that compares the
// stream's result with the record's publishes nothing more (review
// finding: encoding/json's replacement differed after the round trip).
func TestInvalidUTF8ResultPublishedOnce(t *testing.T) {
	e := newEnv(t)
	w := e.startWorker("w1", e.supportAgent(agenttest.NewScriptedModel(agenttest.Reply(agenttest.Text("caf\xc3")))), worker.Config{})
	e.publish(request("inv-utf8", "s1", "hi"), nil)
	if res := e.await("inv-utf8"); res.Content != "caf\uFFFD" {
		t.Fatalf("content = %q", res.Content)
	}
	eventually(t, "completion acked", func() bool { return w.count("support", "completed") == 1 })
	e.publishRaw(e.sc.RequestSubject("support"), mustJSON(t, request("inv-utf8", "s1", "hi")), "again-inv-utf8", nil)
	eventually(t, "duplicate acked", func() bool { return w.count("support", "duplicate") == 1 })
	ctx := context.Background()
	s, err := e.js.Stream(ctx, e.sc.ResultsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(e.sc.ResultSubject("inv-utf8")))
	if err != nil {
		t.Fatal(err)
	}
	if info.State.LastSeq != 1 {
		t.Fatalf("results stream last seq %d: the duplicate published the result again", info.State.LastSeq)
	}
}

// A final answer whose result would not fit one NATS message (264 KB of
// markup that JSON escapes to about 1.1 MB, beyond the default 1 MiB
// max_payload) is cut to fit and published, marked truncated, instead of
// being recorded and then failing to publish on every redelivery.
func TestOversizedResultIsCutToFit(t *testing.T) {
	e := newEnv(t)
	text := strings.Repeat("<b>&</b>", 33000)
	llm := agenttest.NewScriptedModel(agenttest.Reply(agenttest.Text(text)))
	e.startWorker("w1", e.supportAgent(llm), worker.Config{})
	e.publish(request("inv-big", "s1", "render the table"), nil)
	res := e.await("inv-big")
	if res.Status != envelope.StatusCompleted || !res.Truncated || res.Content == "" || !strings.HasPrefix(text, res.Content) {
		t.Fatalf("result %s truncated=%v with %d of %d bytes, want a completed, truncated prefix", res.Status, res.Truncated, len(res.Content), len(text))
	}
	rec, err := e.invs.Get(context.Background(), "inv-big")
	if err != nil {
		t.Fatal(err)
	}
	r, err := worker.DecodeRecord(rec)
	if err != nil || r.Result == nil || r.Result.Content != res.Content {
		t.Fatalf("the record's result differs from the published one (%v)", err)
	}
	if n := len(e.dlqEntries()); n != 0 {
		t.Fatalf("%d DLQ entries, want none", n)
	}
}

// A request whose Agent-Replay-Count header is negative (set by a
// producer: only the replayer sets it, from 1) runs as a first run, and its
// result keeps its Nats-Msg-Id (a negative count made the worker publish
// it without one, so a redelivery could store a second result).
func TestNegativeReplayCountIsAFirstRun(t *testing.T) {
	e := newEnv(t)
	w := e.startWorker("w1", e.supportAgent(agenttest.NewScriptedModel(agenttest.Reply(agenttest.Text("done")))), worker.Config{})
	e.publish(request("inv-neg", "s1", "hi"), map[string]string{envelope.HeaderReplayCount: "-1"})
	if res := e.await("inv-neg"); res.Status != envelope.StatusCompleted {
		t.Fatalf("result %+v", res)
	}
	eventually(t, "completion acked", func() bool { return w.count("support", "completed") == 1 })
	ctx := context.Background()
	s, err := e.js.Stream(ctx, e.sc.ResultsStream)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetLastMsgForSubject(ctx, e.sc.ResultSubject("inv-neg"))
	if err != nil {
		t.Fatal(err)
	}
	if id := m.Header.Get(envelope.HeaderMsgID); id != worker.ResultMsgID("inv-neg", 0, envelope.StatusCompleted) {
		t.Fatalf("result Nats-Msg-Id = %q, want %q", id, worker.ResultMsgID("inv-neg", 0, envelope.StatusCompleted))
	}
}
