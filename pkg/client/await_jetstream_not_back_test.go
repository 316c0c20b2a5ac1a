package client_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review, twenty-third session): an Await started
// while the server was back but its JetStream did not answer yet ended at
// once with "no responders" instead of waiting on its subscription.
//
// Await's doc: "a connection that drops and reconnects meanwhile (a server
// restart) does not end it", and while it waits a look-up that fails is
// tried again ("the live subscription still works"). The producer's own
// look-up (producercli.lookup) tries again on "no JetStream responders yet
// after a restart" too. But Await's first look-up returns any error other
// than "no result" or a lost reply: an Await that starts while the server
// is back but its JetStream does not answer yet (a cluster node whose
// streams are not up, modelled here by a server without JetStream on the
// same port) ends at once with "no responders", although its subscription
// works and the result arrives on it a moment later. A batch line whose
// publish had succeeded is reported "error" (exit 1), `producer await`
// exits 1, for a request that runs and completes.
func TestAwaitStartedWhileJetStreamIsNotBackKeepsWaiting(t *testing.T) {
	s1 := natstest.RunServerAt(t, t.TempDir(), -1)
	port := s1.Addr().(*net.TCPAddr).Port

	nc, reconnected := reconnectingConn(t, s1.ClientURL())
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	scfg := streams.Config{}.WithDefaults()
	if _, err := streams.Ensure(ctx, js, scfg); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(js, nc, client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	// The client has its results-stream handle (an earlier line's look-up).
	if _, err := c.Lookup(ctx, "warm-up"); err == nil {
		t.Fatal("test premise: warm-up has a result")
	}

	// The server restarts; it takes connections before its JetStream
	// answers.
	s1.Shutdown()
	s1.WaitForShutdown()
	s2, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go s2.Start()
	t.Cleanup(func() { s2.Shutdown(); s2.WaitForShutdown() })
	if !s2.ReadyForConnections(10 * time.Second) {
		t.Fatal("second server not ready")
	}
	select {
	case <-reconnected:
	case <-ctx.Done():
		t.Fatal("no reconnect")
	}

	const id = "inv-js-not-back"
	waiting := make(chan struct{})
	client.SetWaitingHook(c, func(string) { close(waiting) })
	type out struct {
		res *envelope.Result
		err error
	}
	done := make(chan out, 1)
	actx, acancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer acancel()
	go func() {
		res, err := c.Await(actx, id)
		done <- out{res, err}
	}()
	select {
	case o := <-done:
		t.Fatalf("Await ended at once with (%+v, %v) while the server's JetStream was not answering yet; "+
			"want it to wait on its subscription as it does for a failed look-up later", o.res, o.err)
	case <-waiting:
	case <-ctx.Done():
		t.Fatal("Await neither waited nor ended")
	}

	// The result arrives on the subscription.
	pub := natstest.Connect(t, s2)
	b, _ := (&envelope.Result{InvocationID: id, Status: envelope.StatusCompleted, Content: "done"}).Encode()
	if err := pub.Publish(envelope.ResultSubject(envelope.DefaultResultPrefix, id), b); err != nil {
		t.Fatal(err)
	}
	select {
	case o := <-done:
		if o.err != nil || o.res.Content != "done" {
			t.Fatalf("Await = (%+v, %v); want the result delivered on the subscription", o.res, o.err)
		}
	case <-ctx.Done():
		t.Fatal("Await did not return the live result")
	}
}
