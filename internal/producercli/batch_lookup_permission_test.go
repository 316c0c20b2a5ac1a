package producercli_test

import (
	"bytes"
	"context"
	"errors"
	"net/url"
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

// Regression (found in review, twenty-fourth session): a batch line's
// result look-up that the connection's permissions refuse waited out the
// whole --timeout and blamed an outage. A producer whose NATS user may
// publish requests and subscribe to results, but whose direct get of a
// result by subject the server refuses (a common permissions slip:
// "$JS.API.DIRECT.GET.AGENT_RESULTS" allowed, its ".>" last-by-subject form
// not). The server answers each look-up with a permissions violation
// (kept as the connection's last error) and never replies to it.
// client.Await names that violation since the twenty-third session
// (LookupOnce / lookupRefused), but the look-up a batch line (and `send
// --wait`) makes before submitting was producercli.lookup, which took
// every unanswered try for a lost one and tried again until --timeout:
// each line waited out its whole timeout (2 minutes by default: a 50,000-line
// batch at --concurrency 4 would take 17 days to fail) and then said "the
// result look-up got no answer ... nothing was submitted", which sends the
// author looking for a NATS outage, not a permission. It now uses
// client.LookupOnce and stops at the first refused try.
func TestBatchLookupDeniedByPermissionsNamesThePermission(t *testing.T) {
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
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
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
		`{"invocation_id":"perm-lookup-1","agent":"support","user_id":"u1","session_id":"s1","text":"hello"}` + "\n"))
	if err != nil || len(lines) != 1 || lines[0].Err != nil {
		t.Fatalf("test premise: %+v %v", lines, err)
	}
	const timeout = 15 * time.Second
	start := time.Now()
	res, err := producercli.RunBatch(ctx, c, lines, producercli.BatchOptions{Concurrency: 1, Timeout: timeout})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(nc.LastError(), nats.ErrPermissionViolation) {
		t.Fatalf("test premise: the connection holds no permission violation (%v)", nc.LastError())
	}
	r := res[0]
	if !errors.Is(r.Err, nats.ErrPermissionViolation) {
		t.Fatalf("line whose result look-up the server refuses: %s after %v (--timeout %v): %v;\n"+
			"want an error naming the permission violation the connection holds (%v), as client.Await gives, "+
			"not \"no answer\" after waiting out the timeout",
			r.Outcome, took.Round(time.Second), timeout, r.Err, nc.LastError())
	}
	if r.Outcome != producercli.OutcomeError || r.Submitted || !strings.Contains(r.Err.Error(), "DIRECT.GET") {
		t.Fatalf("line whose result look-up the server refuses: %s (submitted %v): %v; want error, not submitted, naming the subject refused",
			r.Outcome, r.Submitted, r.Err)
	}

	// send --wait makes the same look-up before it sends: exit 1, naming
	// the permission, nothing sent.
	var out, errb bytes.Buffer
	u, _ := url.Parse(s.ClientURL())
	u.User = url.UserPassword("producer", "p")
	code := producercli.Run(ctx, []string{"--nats-url", u.String(), "--timeout", timeout.String(),
		"send", "--agent", "support", "--user", "u1", "--session", "s1", "--invocation", "perm-lookup-2", "--wait", "hello"},
		producercli.Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
	if code != producercli.ExitError || !strings.Contains(errb.String(), "Permissions Violation") {
		t.Fatalf("send --wait whose result look-up the server refuses: exit %d, stderr %q; want exit 1 naming the permission violation",
			code, errb.String())
	}
}
