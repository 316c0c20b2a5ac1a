package producercli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/producercli"
	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/pkg/client"
)

// Regression (found in review, twenty-first session): a publish the
// connection's permissions refuse fails at once, not resent until its timeout.
// A producer whose NATS user may not publish to the requests subjects
// (a wrong account, a permissions typo): the server answers the publish
// with a permissions violation and no PubAck ever comes. That is no
// outage, but publish takes the try's timeout for one and sends the line
// again until its --timeout: the line fails after the whole timeout
// (2 minutes by default) instead of after one publish timeout (5 s, as
// before the change), for every line of the batch.
func TestBatchPublishDeniedByPermissionsFailsSoon(t *testing.T) {
	opts := &server.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
		Users: []*server.User{
			{Username: "admin", Password: "a"},
			{Username: "producer", Password: "p", Permissions: &server.Permissions{
				Publish: &server.SubjectPermission{Allow: []string{"$JS.API.>"}},
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
	// No deadline, as the batch command's (signal) context has none: a
	// publish then gets the JetStream client's default timeout (5 s).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(60*time.Second, cancel)

	admin, err := nats.Connect(s.ClientURL(), nats.UserInfo("admin", "a"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ajs, _ := jetstream.New(admin)
	sc := streams.Config{}.WithDefaults()
	if _, err := streams.Ensure(ctx, ajs, sc); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(s.ClientURL(), nats.UserInfo("producer", "p"), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	c, err := client.New(js, nc, producercli.ClientConfig(sc))
	if err != nil {
		t.Fatal(err)
	}
	lines, err := producercli.ParseBatch(strings.NewReader(
		`{"invocation_id":"perm-1","agent":"support","user_id":"u1","session_id":"s1","text":"hello"}` + "\n"))
	if err != nil || len(lines) != 1 || lines[0].Err != nil {
		t.Fatalf("test premise: %+v %v", lines, err)
	}
	start := time.Now()
	res, err := producercli.RunBatch(ctx, c, lines, producercli.BatchOptions{Concurrency: 1, Timeout: 30 * time.Second})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if took > 10*time.Second {
		t.Fatalf("line whose publish the server denies took %v to fail (outcome %q, err %v); want it to fail after one publish timeout, as before", took.Round(time.Second), res[0].Outcome, res[0].Err)
	}
}
