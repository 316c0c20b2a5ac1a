package replayer

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/config"
)

// Regression (found in review, nineteenth session): the stores check
// (commit 9312e47) failed show, replay and drain with exit 1 on any error
// looking up the worker consumer other than "not found": a replayer whose
// NATS user may not read that consumer's info (a permission error, which
// NATS answers with no reply: the look-up times out), or a JetStream
// timeout, made commands that worked before the check unusable. A check
// that cannot be decided now warns ("stores not checked: …") for show and
// replay --dry-run, which change nothing, and they go on; the real replay
// and drain refuse to run without it (exit 1, as when they cannot reach
// their stores), saying what to grant, and replay nothing.
func TestStoresCheckUndecidedOnAConsumerLookUpError(t *testing.T) {
	// A server whose "replayer" user may not ask for the worker
	// consumer's info; "fleet" may do anything.
	sc := StreamsConfig(config.DefaultReplayer())
	denied := fmt.Sprintf("$JS.API.CONSUMER.INFO.%s.%s", sc.RequestsStream, sc.WorkerConsumer)
	srv, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
		Users: []*server.User{
			{Username: "fleet", Password: "fleet"},
			{Username: "replayer", Password: "replayer", Permissions: &server.Permissions{
				Publish: &server.SubjectPermission{Allow: []string{">"}, Deny: []string{denied}},
			}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		t.Fatal("server not ready")
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	addr := strings.TrimPrefix(srv.ClientURL(), "nats://")
	nc, err := nats.Connect("nats://fleet:fleet@" + addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	x := newFxOn(t, true, js, nc, "nats://fleet:fleet@"+addr)
	x.seed("perm", 1, "SERVER", 0)
	// The denied look-up gets no answer: wait less than the 10 s default.
	defer func(d time.Duration) { storesCheckTimeout = d }(storesCheckTimeout)
	storesCheckTimeout = 500 * time.Millisecond
	replayer := map[string]string{"AGENTFLEET_NATS_URL": "nats://replayer:replayer@" + addr}
	ctx := ctxT(t)

	// Test setup: the fleet's user reads the consumer, the replayer's not.
	if _, err := x.js.Consumer(ctx, sc.RequestsStream, sc.WorkerConsumer); err != nil {
		t.Fatal(err)
	}
	rcfg := x.cfg
	rcfg.NATS.URL = replayer["AGENTFLEET_NATS_URL"]
	rf, err := OpenFleet(ctx, rcfg, false, nopLog())
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Close()
	if _, err := checkFleetStores(ctx, rf); !errors.Is(err, ErrStoresNotChecked) {
		t.Fatalf("test setup: the replayer's look-up of the worker consumer: %v, want an error that is not \"not found\"", err)
	}

	// show and the dry run warn and go on.
	out := x.run(ctx, replayer, "show", "perm-0").must(t, ExitOK, "show")
	contains(t, out.stderr, "warning: stores not checked", "worker consumer")
	contains(t, out.stdout, "perm-0")
	out = x.run(ctx, replayer, "replay", "--dry-run").must(t, ExitOK, "replay --dry-run")
	contains(t, out.stderr, "warning: stores not checked")
	contains(t, out.stdout, "would replay 1")

	// The real replay and drain refuse without the check, naming what to
	// grant; nothing is replayed.
	out = x.run(ctx, replayer, "replay", "--yes").must(t, ExitError, "replay")
	contains(t, out.stderr, "stores not checked", denied)
	out = x.run(ctx, replayer, "drain", "--metrics-addr", "").must(t, ExitError, "drain")
	contains(t, out.stderr, "stores not checked", denied)
	if n := x.streamState(sc.RequestsStream).Msgs; n != 0 {
		t.Fatalf("%d replays published without the stores check", n)
	}
	if ids := x.dlqIDs(); len(ids) != 1 {
		t.Fatalf("DLQ holds %v, want the one entry", ids)
	}
}
