package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// lostReplies starts a server on which JetStream's replies are
// lost: a subscriber takes every JetStream API request ($JS.API.>) and
// never answers (as requests lost in a restart are never answered), while
// the connection itself works (flushes, subscriptions). It returns a
// client on it.
func lostReplies(t *testing.T) *client.Client {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	hole, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hole.Close)
	if _, err := hole.Subscribe("$JS.API.>", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	if err := hole.Flush(); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	sc := streams.Config{}.WithDefaults()
	c, err := client.New(js, nc, client.Config{
		RequestsStream: sc.RequestsStream, ResultsStream: sc.ResultsStream,
		RequestPrefix: sc.RequestPrefix, ResultPrefix: sc.ResultPrefix,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Regression (found in review of this session's fix, twenty-third session):
// ErrUnanswered's "the last:" named the look-up the caller's own deadline
// cut short ("context deadline exceeded") instead of why the look-ups went
// unanswered. Look-ups that get no answer take LookupLimit (2 s) each, so
// the ctx mostly ends during one; AwaitAfter no longer records the error of
// a look-up after which ctx has ended.
func TestAwaitUnansweredNamesTheLastFailureNotItsOwnDeadline(t *testing.T) {
	c := lostReplies(t)
	const id = "unanswered-last"
	// Look-ups at about 0 s and 2.05 s get no answer (2 s each); the one
	// started at about 4.15 s is cut by this deadline.
	actx, acancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer acancel()
	res, err := c.Await(actx, id)
	t.Logf("Await = %+v, %v", res, err)
	if !errors.Is(err, client.ErrUnanswered) {
		t.Fatalf("premise: Await = %+v, %v; want ErrUnanswered", res, err)
	}
	msg := err.Error()
	last := msg[strings.LastIndex(msg, "the last:"):]
	if strings.Contains(last, "deadline exceeded") {
		t.Fatalf("ErrUnanswered names as the last look-up's failure %q: the caller's own deadline cutting the "+
			"last look-up short, not why the look-ups went unanswered (their replies never came)", last)
	}
}

// Regression (found in review of this session's fix, twenty-third session):
// AwaitSent of a duplicate whose look-ups were never answered mostly
// returned a plain ctx error (the ctx ended inside one of
// answerOfDuplicate's tries, which take up to 4 s), not the documented
// error matching ctx.Err() and ErrUnanswered, so `producer send --wait`
// exited 3 or 1 depending on where the deadline fell. answerOfDuplicate now
// keeps the last unanswered try's failure and names it when ctx ends inside
// a later try.
func TestAwaitSentDuplicateUnansweredMatchesErrUnanswered(t *testing.T) {
	c := lostReplies(t)
	const id = "dup-unanswered"
	before := &client.StoredResult{
		Result: &envelope.Result{InvocationID: id, Status: envelope.StatusFailed, ErrorClass: badInput, UserMessage: "rejected"},
		Seq:    3, Time: time.Now(),
	}
	rec := &client.Receipt{InvocationID: id, Stream: "AGENT_REQUESTS", Sequence: 7, Duplicate: true}
	actx, acancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer acancel()
	res, err := c.AwaitSent(actx, rec, before)
	t.Logf("AwaitSent = %+v, %v", res, err)
	if err == nil {
		t.Fatalf("premise: AwaitSent answered %+v without an answered look-up", res)
	}
	if !errors.Is(err, client.ErrUnanswered) {
		t.Fatalf("AwaitSent of a duplicate whose look-ups were never answered = %v; want (as documented) an error "+
			"matching ctx.Err() and ErrUnanswered, so that `producer send --wait` names the cause (exit 1) "+
			"instead of exit 3 depending on where the deadline fell", err)
	}
}
