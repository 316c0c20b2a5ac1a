package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/client/clienttest"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

func newClient(t *testing.T, tg streamstest.Target) *client.Client {
	t.Helper()
	return newClientOn(t, tg, tg.JS, tg.NC)
}

// newClientOn is a client of tg's streams on the connection nc (js on it).
func newClientOn(t *testing.T, tg streamstest.Target, js jetstream.JetStream, nc *nats.Conn) *client.Client {
	t.Helper()
	c, err := client.New(js, nc, client.Config{
		RequestsStream: tg.Cfg.RequestsStream, ResultsStream: tg.Cfg.ResultsStream,
		RequestPrefix: tg.Cfg.RequestPrefix, ResultPrefix: tg.Cfg.ResultPrefix,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func request(text string) *envelope.Request {
	return &envelope.Request{Agent: "support", UserID: "u1", SessionID: "s1", Message: model.NewTextContent(model.RoleUser, text)}
}

func TestAwaitBeforeCompletion(t *testing.T) {
	for _, tg := range streamstest.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			w := clienttest.Start(t, tg.JS, tg.Cfg, clienttest.Echo, clienttest.Held())
			c := newClient(t, tg)
			waiting := make(chan string, 1)
			client.SetWaitingHook(c, func(id string) { waiting <- id })

			id, err := c.Submit(ctx, request("hello"))
			if err != nil {
				t.Fatal(err)
			}
			if !envelope.ValidID(id) {
				t.Fatalf("generated id %q", id)
			}
			type out struct {
				res *envelope.Result
				err error
			}
			done := make(chan out, 1)
			go func() {
				res, err := c.Await(ctx, id)
				done <- out{res, err}
			}()
			// The worker holds the request and Await has found nothing stored:
			// the result can only arrive on the live subscription.
			if got := recv(ctx, t, w.Taken()); got != id {
				t.Fatalf("worker took %q", got)
			}
			if got := recv(ctx, t, waiting); got != id {
				t.Fatalf("waiting for %q", got)
			}
			w.Release()
			o := recv(ctx, t, done)
			if o.err != nil || o.res.Status != envelope.StatusCompleted || o.res.Content != "echo: hello" || o.res.InvocationID != id {
				t.Fatalf("Await = %+v, %v", o.res, o.err)
			}
		})
	}
}

func TestAwaitAfterCompletion(t *testing.T) {
	tg := streamstest.Embedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	w := clienttest.Start(t, tg.JS, tg.Cfg, clienttest.Echo)
	c := newClient(t, tg)
	res, err := c.SubmitAndAwait(ctx, request("first"))
	if err != nil || res.Status != envelope.StatusCompleted {
		t.Fatalf("SubmitAndAwait = %+v, %v", res, err)
	}
	// The live result can reach SubmitAndAwait before the stream has stored
	// it. Once the worker has acked (after the result's PubAck) the result is
	// stored: from then on Await reads it and does not wait.
	streamstest.WaitDrained(ctx, t, tg)
	client.SetWaitingHook(c, func(id string) { t.Errorf("Await waited for %s although it completed", id) })
	again, err := c.Await(ctx, res.InvocationID)
	if err != nil || again.Content != "echo: first" {
		t.Fatalf("Await after completion = %+v, %v", again, err)
	}
	st, err := c.Lookup(ctx, res.InvocationID)
	if err != nil || st.Seq == 0 || st.Content != "echo: first" {
		t.Fatalf("Lookup = %+v, %v", st, err)
	}
	if _, err := c.Lookup(ctx, "never-submitted"); !errors.Is(err, client.ErrNoResult) {
		t.Fatalf("Lookup of an unknown id: %v", err)
	}
	if n := w.Runs()[res.InvocationID]; n != 1 {
		t.Fatalf("ran %d times", n)
	}
}

func TestDuplicateSubmitIsDeduplicated(t *testing.T) {
	tg := streamstest.Embedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	w := clienttest.Start(t, tg.JS, tg.Cfg, clienttest.Echo, clienttest.Held())
	c := newClient(t, tg)

	req := request("once")
	req.InvocationID = "inv-dup-1"
	first, err := c.Send(ctx, req)
	if err != nil || first.Duplicate {
		t.Fatalf("first Send = %+v, %v", first, err)
	}
	second, err := c.Send(ctx, request("once"))
	if err != nil || second.Duplicate || second.InvocationID == first.InvocationID {
		t.Fatalf("a request without id got %+v, %v", second, err)
	}
	dup := request("once")
	dup.InvocationID = "inv-dup-1"
	again, err := c.Send(ctx, dup)
	if err != nil || !again.Duplicate || again.Sequence != first.Sequence {
		t.Fatalf("resubmission = %+v, %v; want a duplicate of seq %d", again, err, first.Sequence)
	}
	w.Release()
	for _, id := range []string{first.InvocationID, second.InvocationID} {
		if _, err := c.Await(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if runs := w.Runs(); runs["inv-dup-1"] != 1 || len(runs) != 2 {
		t.Fatalf("runs %v", runs)
	}
}

func TestAwaitTimesOut(t *testing.T) {
	tg := streamstest.Embedded(t)
	c := newClient(t, tg)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := c.Await(ctx, "nobody-runs-this")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Await = %v, want DeadlineExceeded", err)
	}
	cctx, ccancel := context.WithCancel(context.Background())
	client.SetWaitingHook(c, func(string) { ccancel() })
	if _, err := c.Await(cctx, "nobody-runs-this"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Await after cancel = %v", err)
	}
}

func TestAwaitAfterIgnoresOlderResult(t *testing.T) {
	tg := streamstest.Embedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c := newClient(t, tg)
	publish := func(content string) {
		b, _ := (&envelope.Result{InvocationID: "inv-r", Status: envelope.StatusDeadLettered, Content: content}).Encode()
		if _, err := tg.JS.Publish(ctx, tg.Cfg.ResultSubject("inv-r"), b); err != nil {
			t.Fatal(err)
		}
	}
	publish("old")
	old, err := c.Lookup(ctx, "inv-r")
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan string, 1)
	client.SetWaitingHook(c, func(id string) { waiting <- id })
	done := make(chan *envelope.Result, 1)
	go func() {
		res, err := c.AwaitAfter(ctx, "inv-r", old.Seq)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	recv(ctx, t, waiting)
	publish("new")
	if res := recv(ctx, t, done); res == nil || res.Content != "new" {
		t.Fatalf("AwaitAfter = %+v", res)
	}
}

func TestSubmitValidates(t *testing.T) {
	tg := streamstest.Embedded(t)
	c := newClient(t, tg)
	ctx := context.Background()
	cases := map[string]*envelope.Request{
		"nil":          nil,
		"no agent":     {UserID: "u", SessionID: "s", Message: model.NewTextContent(model.RoleUser, "x")},
		"dotted id":    {InvocationID: "a.b", Agent: "support", UserID: "u", SessionID: "s", Message: model.NewTextContent(model.RoleUser, "x")},
		"empty text":   {Agent: "support", UserID: "u", SessionID: "s", Message: model.NewTextContent(model.RoleUser, "")},
		"too large":    request(strings.Repeat("x", envelope.DefaultMaxSize)),
		"wrong schema": {V: 7, Agent: "support", UserID: "u", SessionID: "s", Message: model.NewTextContent(model.RoleUser, "x")},
	}
	for name, req := range cases {
		_, err := c.Submit(ctx, req)
		var ie *envelope.InvalidError
		if !errors.As(err, &ie) {
			t.Errorf("%s: Submit = %v, want *envelope.InvalidError", name, err)
		}
	}
	if _, err := c.Await(ctx, "a.b"); !errors.Is(err, client.ErrInvalidInvocationID) {
		t.Errorf("Await(a.b) = %v", err)
	}
	// Bad result on the subject.
	if _, err := tg.JS.Publish(ctx, tg.Cfg.ResultSubject("inv-bad"), []byte("garbage")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Await(ctx, "inv-bad"); !errors.Is(err, client.ErrBadResult) {
		t.Errorf("Await of a bad result = %v", err)
	}
}

// recv receives from ch or fails the test when ctx ends first.
func recv[T any](ctx context.Context, t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatalf("waited in vain: %v", ctx.Err())
		panic("unreachable")
	}
}

// The server hands a result to the subscribers of its subject before the
// stream stores it, so a result published just before Await's subscription
// was in place reaches neither the subscription nor Await's first look-up.
// The stream here stores what is published to staging.<id> as res.<id>:
// the waiting hook publishes there after the first look-up, which is that
// race made certain. Await must still see the result (from the stream).
func TestAwaitSeesAResultStoredButNotDeliveredLive(t *testing.T) {
	tg := streamstest.Embedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := tg.JS.CreateStream(ctx, jetstream.StreamConfig{
		Name: "RES_STAGED", Subjects: []string{"staging.*"},
		SubjectTransform:  &jetstream.SubjectTransformConfig{Source: "staging.*", Destination: "res.{{wildcard(1)}}"},
		MaxMsgsPerSubject: 1, AllowDirect: true, Storage: jetstream.MemoryStorage,
	}); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(tg.JS, tg.NC, client.Config{ResultsStream: "RES_STAGED", ResultPrefix: "res"})
	if err != nil {
		t.Fatal(err)
	}
	publish := func(id, content string) uint64 {
		t.Helper()
		b, _ := (&envelope.Result{InvocationID: id, Status: envelope.StatusCompleted, Content: content}).Encode()
		ack, err := tg.JS.Publish(ctx, "staging."+id, b)
		if err != nil {
			t.Fatal(err)
		}
		return ack.Sequence
	}
	client.SetWaitingHook(c, func(id string) { publish(id, "stored after the look-up") })

	res, err := c.Await(ctx, "inv-staged")
	if err != nil || res.Content != "stored after the look-up" {
		t.Fatalf("Await = %+v, %v", res, err)
	}
	// AwaitAfter's later look-ups still ignore the older result.
	old := publish("inv-staged-2", "old")
	res, err = c.AwaitAfter(ctx, "inv-staged-2", old)
	if err != nil || res.Content != "stored after the look-up" {
		t.Fatalf("AwaitAfter = %+v, %v", res, err)
	}
}

// A result published again with the Nats-Msg-Id it was stored under (two
// workers publishing one recorded outcome) is dropped by the stream but
// still reaches the subject's subscribers. AwaitAfter must not take that
// copy of the result at afterSeq for a newer one: it returns the result
// stored after it.
func TestAwaitAfterIgnoresADroppedRepublish(t *testing.T) {
	tg := streamstest.Embedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c := newClient(t, tg)
	publish := func(content, msgID string) *jetstream.PubAck {
		t.Helper()
		b, _ := (&envelope.Result{InvocationID: "inv-rp", Status: envelope.StatusDeadLettered, Content: content}).Encode()
		ack, err := tg.JS.Publish(ctx, tg.Cfg.ResultSubject("inv-rp"), b, jetstream.WithMsgID(msgID))
		if err != nil {
			t.Fatal(err)
		}
		return ack
	}
	publish("old", "res-inv-rp-0-dead_lettered")
	old, err := c.Lookup(ctx, "inv-rp")
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan string, 1)
	client.SetWaitingHook(c, func(id string) { waiting <- id })
	type out struct {
		res *envelope.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := c.AwaitAfter(ctx, "inv-rp", old.Seq)
		done <- out{res, err}
	}()
	recv(ctx, t, waiting)
	if ack := publish("old", "res-inv-rp-0-dead_lettered"); !ack.Duplicate {
		t.Fatalf("the re-publish was stored: %+v", ack)
	}
	publish("new", "res-inv-rp-1-completed")
	if o := recv(ctx, t, done); o.err != nil || o.res.Content != "new" {
		t.Fatalf("AwaitAfter = %+v, %v; want the result stored after seq %d", o.res, o.err, old.Seq)
	}
}
