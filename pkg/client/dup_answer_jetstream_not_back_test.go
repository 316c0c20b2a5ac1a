package client_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review of this session's fix, twenty-third
// session): a duplicate of a resend that completed was answered with the
// stale BAD_INPUT refusal while JetStream did not answer yet (its look-up's
// "no responders" read as "nothing newer").
//
// An invocation was refused as BAD_INPUT; a later resend ran, completed
// (its result stored after the refusal) and was removed from the requests
// stream; the producer sends it once more within that resend's duplicate
// window: a duplicate, whose answer is the completed result ("gone" rule).
// The server restarts just then and its JetStream does not answer yet
// (modelled, as in TestAwaitStartedWhileJetStreamIsNotBackKeepsWaiting, by
// a server without JetStream on the same port). Before 882a367 the
// look-up's "no responders" was returned as an error; now answerOfDuplicate
// takes it for "nothing newer" and answers at once with the stale BAD_INPUT
// refusal (exit 4 and "send it again after the duplicate window" in
// `producer send --wait`, Earlier in a batch line), although the completed
// result is in the stream and JetStream answers a moment later. Unlike
// Await there is no subscription to ride out on: an unanswered look-up
// here must be tried again (or reported), never read as "nothing newer".
func TestDuplicateAnswerIsNotAStaleRefusalWhileJetStreamIsNotBack(t *testing.T) {
	dir := t.TempDir()
	s1 := natstest.RunServerAt(t, dir, -1)
	port := s1.Addr().(*net.TCPAddr).Port

	nc, reconnected := reconnectingConn(t, s1.ClientURL())
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	scfg := streams.Config{}.WithDefaults()
	if _, err := streams.Ensure(ctx, js, scfg); err != nil {
		t.Fatal(err)
	}
	tg := streamstest.Target{Name: "dup-js-not-back", JS: js, NC: nc, Cfg: scfg}
	c := newClientOn(t, tg, js, nc)

	const id = "dup-stale-refusal"
	rec, before := duplicateOfACompletedResend(ctx, t, c, tg, js, scfg, id)

	// The server restarts; its JetStream does not answer yet.
	s1.Shutdown()
	s1.WaitForShutdown()
	s2, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go s2.Start()
	stopS2 := func() { s2.Shutdown(); s2.WaitForShutdown() }
	t.Cleanup(stopS2)
	if !s2.ReadyForConnections(10 * time.Second) {
		t.Fatal("second server not ready")
	}
	recv(ctx, t, reconnected)

	type out struct {
		res *envelope.Result
		err error
	}
	done := make(chan out, 1)
	actx, acancel := context.WithTimeout(ctx, 30*time.Second)
	defer acancel()
	go func() {
		res, err := c.AwaitSent(actx, rec, before)
		done <- out{res, err}
	}()
	var o out
	select {
	case o = <-done:
	case <-time.After(3 * time.Second):
		// Still waiting: JetStream comes back (same store, same port).
		stopS2()
		natstest.RunServerAt(t, dir, port)
		o = recv(ctx, t, done)
	}
	if o.err == nil && o.res == before.Result {
		t.Fatalf("AwaitSent answered a duplicate of a resend that completed with the stale BAD_INPUT refusal (%+v) "+
			"because the look-up got no JetStream responders; want the completed result (or an error), not a guess", o.res)
	}
	if o.err == nil && o.res.Status != envelope.StatusCompleted {
		t.Fatalf("AwaitSent = %+v; want the completed result", o.res)
	}
	t.Logf("AwaitSent = %+v, %v", o.res, o.err)
}

// Regression (found in review of this session's fix, twenty-third
// session): a producer without the requests stream's read permissions got
// the stale BAD_INPUT refusal for a duplicate of a resend that completed
// when the final result look-up had no JetStream responders.
//
// As TestDuplicateAnswerIsNotAStaleRefusalWhileJetStreamIsNotBack, but the
// producer may not read the requests stream (as in
// TestAwaitSentDuplicateWithoutRequestsStreamPermissions): its reads of it
// go unanswered and the "gone" rule decides at once, by the result look-up
// alone. That look-up gets no responders while JetStream is not back, and
// must be tried again, not read as "nothing newer".
func TestDuplicateAnswerWithoutRequestsStreamPermissionsWaitsForJetStream(t *testing.T) {
	sc := streams.Config{}.WithDefaults()
	dir := t.TempDir()
	users := []*server.User{
		{Username: "admin", Password: "a"},
		{Username: "producer", Password: "p", Permissions: &server.Permissions{
			Publish: &server.SubjectPermission{Allow: []string{
				sc.RequestPrefix + ".>",
				"$JS.API.STREAM.INFO." + sc.ResultsStream,
				"$JS.API.STREAM.MSG.GET." + sc.ResultsStream,
				"$JS.API.DIRECT.GET." + sc.ResultsStream,
				"$JS.API.DIRECT.GET." + sc.ResultsStream + ".>",
			}},
			Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.>", sc.ResultPrefix + ".>"}},
		}},
	}
	start := func(port int, withJS bool) *server.Server {
		opts := &server.Options{Host: "127.0.0.1", Port: port, NoLog: true, NoSigs: true, Users: users}
		if withJS {
			opts.JetStream, opts.StoreDir = true, dir
		}
		s, err := server.NewServer(opts)
		if err != nil {
			t.Fatal(err)
		}
		go s.Start()
		t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
		if !s.ReadyForConnections(10 * time.Second) {
			t.Fatal("server not ready")
		}
		return s
	}
	s1 := start(-1, true)
	port := s1.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	admin, err := nats.Connect(s1.ClientURL(), nats.UserInfo("admin", "a"), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	ajs, _ := jetstream.New(admin)
	if _, err := streams.Ensure(ctx, ajs, sc); err != nil {
		t.Fatal(err)
	}
	tg := streamstest.Target{Name: "admin", JS: ajs, NC: admin, Cfg: sc}

	nc, reconnected := reconnectingConn(t, s1.ClientURL(), nats.UserInfo("producer", "p"),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	js, _ := jetstream.New(nc)
	c := newClientOn(t, tg, js, nc)

	const id = "dup-perm-js-not-back"
	rec, before := duplicateOfACompletedResend(ctx, t, c, tg, ajs, sc, id)

	// The server restarts; its JetStream does not answer yet.
	s1.Shutdown()
	s1.WaitForShutdown()
	s2 := start(port, false)
	recv(ctx, t, reconnected)

	type out struct {
		res *envelope.Result
		err error
	}
	done := make(chan out, 1)
	actx, acancel := context.WithTimeout(ctx, 40*time.Second)
	defer acancel()
	go func() {
		res, err := c.AwaitSent(actx, rec, before)
		done <- out{res, err}
	}()
	var o out
	select {
	case o = <-done:
	case <-time.After(4 * time.Second):
		// Still waiting: JetStream comes back (same store, same port).
		s2.Shutdown()
		s2.WaitForShutdown()
		start(port, true)
		o = recv(ctx, t, done)
	}
	if o.err == nil && o.res == before.Result {
		t.Fatalf("AwaitSent answered a duplicate of a resend that completed with the stale BAD_INPUT refusal (%+v) "+
			"because the result look-up got no JetStream responders; want the completed result", o.res)
	}
	if o.err != nil || o.res.Status != envelope.StatusCompleted {
		t.Fatalf("AwaitSent = %+v, %v; want the completed result", o.res, o.err)
	}
}

// reconnectingConn connects to url, reconnecting for ever every 20ms, with
// opts added; each reconnect is signalled (without blocking) on the
// returned channel.
func reconnectingConn(t *testing.T, url string, opts ...nats.Option) (*nats.Conn, <-chan struct{}) {
	t.Helper()
	reconnected := make(chan struct{}, 4)
	opts = append([]nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(20 * time.Millisecond),
		nats.ReconnectHandler(func(*nats.Conn) {
			select {
			case reconnected <- struct{}{}:
			default:
			}
		})}, opts...)
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc, reconnected
}

// duplicateOfACompletedResend stores a BAD_INPUT refusal of id, then a
// resend of it that ran and completed (its result published through pub,
// the request then removed by its worker), and sends id once more: it
// returns that last send's receipt, a duplicate of the resend, and the
// stored refusal as Lookup read it before the resend.
func duplicateOfACompletedResend(ctx context.Context, t *testing.T, c *client.Client, tg streamstest.Target, pub jetstream.JetStream, sc streams.Config, id string) (*client.Receipt, *client.StoredResult) {
	t.Helper()
	storeRefusal(ctx, t, tg, id)
	before, err := c.Lookup(ctx, id)
	if err != nil || !before.RefusedAsBadInput() {
		t.Fatalf("premise: Lookup = %+v, %v", before, err)
	}
	r1 := dupSend(ctx, t, c, id)
	if r1.Duplicate {
		t.Fatalf("premise: the resend %+v is a duplicate", r1)
	}
	b, _ := (&envelope.Result{InvocationID: id, Status: envelope.StatusCompleted, Content: "done"}).Encode()
	if _, err := pub.Publish(ctx, sc.ResultSubject(id), b); err != nil {
		t.Fatal(err)
	}
	dupTerm(ctx, t, tg, r1.Sequence)
	rec := dupSend(ctx, t, c, id)
	if !rec.Duplicate {
		t.Fatalf("premise: %+v not a duplicate", rec)
	}
	return rec, before
}
