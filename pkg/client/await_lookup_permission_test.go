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
	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// lookupDenied starts a server whose "producer" user may publish
// requests, read the results stream's info and subscribe to results, but
// whose direct gets by subject on the results stream are refused (a common
// misconfiguration: "$JS.API.DIRECT.GET.AGENT_RESULTS" allowed, its ".>"
// last-by-subject form not), and no read of the requests stream (optional,
// as the twenty-first session decided). Every result look-up of that
// producer is refused by the server (-ERR 'Permissions Violation', kept as
// the connection's LastError) and its request is never answered: a "lost"
// look-up to LookupOnce. It returns the admin's target, the producer's
// client and connection.
func lookupDenied(t *testing.T) (streamstest.Target, *client.Client, *nats.Conn) {
	t.Helper()
	sc := streams.Config{}.WithDefaults()
	opts := &server.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
		Users: []*server.User{
			{Username: "admin", Password: "a"},
			{Username: "producer", Password: "p", Permissions: &server.Permissions{
				Publish: &server.SubjectPermission{Allow: []string{
					sc.RequestPrefix + ".>",
					"$JS.API.STREAM.INFO." + sc.ResultsStream,
					"$JS.API.DIRECT.GET." + sc.ResultsStream, // but not its ".>" (last by subject)
				}},
				Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.>", sc.ResultPrefix + ".>"}},
			}},
		},
	}
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })

	admin, err := nats.Connect(s.ClientURL(), nats.UserInfo("admin", "a"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	ajs, _ := jetstream.New(admin)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := streams.Ensure(ctx, ajs, sc); err != nil {
		t.Fatal(err)
	}
	tg := streamstest.Target{Name: "admin", JS: ajs, NC: admin, Cfg: sc}

	nc, err := nats.Connect(s.ClientURL(), nats.UserInfo("producer", "p"),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	c, err := client.New(js, nc, client.Config{
		RequestsStream: sc.RequestsStream, ResultsStream: sc.ResultsStream,
		RequestPrefix: sc.RequestPrefix, ResultPrefix: sc.ResultPrefix,
	})
	if err != nil {
		t.Fatal(err)
	}
	return tg, c, nc
}

// Regression (found in review of this session's fix, twenty-third session):
// a producer whose result look-ups the server refused (a permission
// violation, never answered) waited out its whole context for a stored
// result, and its ErrUnanswered error said the look-ups got no answer, not
// that the connection may not make them. Await now ends with the permission
// violation the connection holds (nc.LastError(), as CheckRequestSubject
// uses for publishes) once a look-up goes unanswered.
func TestAwaitWithoutDirectGetPermissionNamesThePermissionViolation(t *testing.T) {
	tg, c, nc := lookupDenied(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const id = "perm-lookup"
	b, _ := (&envelope.Result{InvocationID: id, Status: envelope.StatusCompleted, Content: "done"}).Encode()
	if _, err := tg.JS.Publish(ctx, tg.Cfg.ResultSubject(id), b); err != nil {
		t.Fatal(err)
	}

	actx, acancel := context.WithTimeout(ctx, 5*time.Second)
	defer acancel()
	res, err := c.Await(actx, id)
	t.Logf("Await = %+v, %v; connection's last error: %v", res, err, nc.LastError())
	if err == nil {
		return // the stored result was read: nothing to name
	}
	if !errors.Is(nc.LastError(), nats.ErrPermissionViolation) {
		t.Fatalf("premise: the connection holds no permission violation (%v)", nc.LastError())
	}
	if !errors.Is(err, nats.ErrPermissionViolation) && !strings.Contains(strings.ToLower(err.Error()), "permission") {
		t.Fatalf("Await for a stored result by a producer the server refuses the look-up = %v;\n"+
			"want an error naming the permission violation the connection holds (%v), "+
			"not \"no result look-up was answered\" after waiting out the context", err, nc.LastError())
	}
	if actx.Err() != nil {
		t.Fatalf("Await ended with %v only when its context did; want it to end once a look-up was refused", err)
	}
}
