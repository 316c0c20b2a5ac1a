package producercli_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/time/rate"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/producercli"
	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// A batch line's publish lost in a server restart (the proxy drops it,
// then cuts the connection as a restart does): the line is sent again once
// the client has reconnected and lands once in the requests stream. It
// failed as "error" at the first lost PubAck (left open in the twentieth
// session): a batch of thousands run across a NATS restart reported every
// line in flight as failed.
func TestBatchPublishIsSentAgainAfterAServerRestart(t *testing.T) {
	tg := streamstest.Embedded(t)
	proxy := natstest.StartCutProxy(t, strings.TrimPrefix(tg.NC.ConnectedUrl(), "nats://"))
	nc, js, reconnected := proxy.Connect(t)
	c, err := client.New(js, nc, producercli.ClientConfig(tg.Cfg))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lines, err := producercli.ParseBatch(strings.NewReader(
		`{"invocation_id":"pub-restart-1","agent":"support","user_id":"u1","session_id":"s1","text":"hello"}` + "\n"))
	if err != nil || len(lines) != 1 || lines[0].Err != nil {
		t.Fatalf("test premise: %+v %v", lines, err)
	}
	subject := envelope.RequestSubject(tg.Cfg.RequestPrefix, "support")
	lost := proxy.SwallowedText(subject)
	proxy.SetSwallow(true)
	type out struct {
		rec *client.Receipt
		err error
	}
	done := make(chan out, 1)
	go func() {
		rec, err := producercli.Publish(ctx, c, lines[0].Request, rate.NewLimiter(rate.Inf, 1), 30*time.Second)
		done <- out{rec, err}
	}()
	select {
	case <-lost: // the publish is dropped: its PubAck never comes
	case <-ctx.Done():
		t.Fatal("no publish sent")
	}
	proxy.Cut()
	select {
	case <-reconnected:
	case <-ctx.Done():
		t.Fatal("no reconnect")
	}
	var o out
	select {
	case o = <-done:
	case <-ctx.Done():
		t.Fatal("publish did not end")
	}
	if o.err != nil {
		t.Fatalf("publish across a server restart: %v; want it sent again once reconnected", o.err)
	}
	s, err := tg.JS.Stream(ctx, tg.Cfg.RequestsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatal(err)
	}
	if n := info.State.Msgs; n != 1 || o.rec.Sequence == 0 {
		t.Fatalf("requests stream holds %d copies (receipt %+v); want the request once", n, o.rec)
	}
}

// The requests stream is missing (the results stream is there, so the
// look-up answers "no result"): the publish gets no responders, and the
// server says the stream does not exist. The line fails at once with that
// error; it is not sent again until its (here one hour) timeout.
func TestBatchPublishToAMissingStreamFailsAtOnce(t *testing.T) {
	tg := streamstest.Embedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := tg.JS.DeleteStream(ctx, tg.Cfg.RequestsStream); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(tg.JS, tg.NC, producercli.ClientConfig(tg.Cfg))
	if err != nil {
		t.Fatal(err)
	}
	lines, err := producercli.ParseBatch(strings.NewReader(
		`{"invocation_id":"no-stream-1","agent":"support","user_id":"u1","session_id":"s1","text":"hello"}` + "\n"))
	if err != nil || len(lines) != 1 || lines[0].Err != nil {
		t.Fatalf("test premise: %+v %v", lines, err)
	}
	res, err := producercli.RunBatch(ctx, c, lines, producercli.BatchOptions{Concurrency: 1, Timeout: time.Hour})
	if err != nil {
		t.Fatalf("batch: %v (the line was sent again until the test's deadline)", err)
	}
	r := res[0]
	if r.Outcome != producercli.OutcomeError || !errors.Is(r.Err, jetstream.ErrStreamNotFound) || !errors.As(r.Err, new(*client.PublishError)) {
		t.Fatalf("line to a missing requests stream: outcome %q, err %v; want error, matching jetstream.ErrStreamNotFound and *client.PublishError", r.Outcome, r.Err)
	}
}
