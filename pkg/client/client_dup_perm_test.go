package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/client"
)

// Regression (found in review, twenty-first session): a producer without read
// permissions on the requests stream still gets its answer.
// A producer whose NATS user may publish requests and read results (the
// results stream's info and direct gets, its result subjects) but may not
// ask the requests stream for its info or messages: before the change a
// resubmission dropped as a duplicate of a refused request got the refusal
// with no request to the server (and producercli's batch summary reads the
// requests stream's info only when it must, "no STREAM.INFO permission
// needed otherwise"). Now AwaitSent asks STREAM.INFO of the requests stream
// on that path and fails (or waits out the caller's timeout) where it
// answered before.
func TestAwaitSentDuplicateWithoutRequestsStreamPermissions(t *testing.T) {
	sc := streams.Config{}.WithDefaults()
	opts := &server.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
		Users: []*server.User{
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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	admin, err := nats.Connect(s.ClientURL(), nats.UserInfo("admin", "a"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ajs, _ := jetstream.New(admin)
	if _, err := streams.Ensure(ctx, ajs, sc); err != nil {
		t.Fatal(err)
	}
	tg := streamstest.Target{Name: "admin", JS: ajs, NC: admin, Cfg: sc}

	nc, err := nats.Connect(s.ClientURL(), nats.UserInfo("producer", "p"), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	c, err := client.New(js, nc, client.Config{
		RequestsStream: sc.RequestsStream, ResultsStream: sc.ResultsStream,
		RequestPrefix: sc.RequestPrefix, ResultPrefix: sc.ResultPrefix,
	})
	if err != nil {
		t.Fatal(err)
	}

	const id = "inv-dup-perm"
	// The refused request (stored, refused, terminated), within its window.
	r0 := dupSend(ctx, t, c, id)
	storeRefusal(ctx, t, tg, id)
	dupTerm(ctx, t, tg, r0.Sequence)
	before, err := c.Lookup(ctx, id)
	if err != nil || !before.RefusedAsBadInput() {
		t.Fatalf("premise: the producer's Lookup = %+v, %v", before, err)
	}
	rec := dupSend(ctx, t, c, id)
	if !rec.Duplicate {
		t.Fatalf("premise: %+v not a duplicate", rec)
	}
	actx, acancel := context.WithTimeout(ctx, 10*time.Second)
	defer acancel()
	start := time.Now()
	res, err := c.AwaitSent(actx, rec, before)
	if err != nil || res != before.Result {
		t.Fatalf("AwaitSent = %+v, %v after %v; want the refusal (before.Result), as before the change, for a producer without the requests stream's STREAM.INFO/MSG.GET",
			res, err, time.Since(start).Round(time.Millisecond))
	}
}
