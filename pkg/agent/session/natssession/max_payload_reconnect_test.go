package natssession_test

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/natssession"
)

// startServer starts an embedded JetStream server on dir and port with the
// given max_payload (0: the server's default), stopped when the test ends.
func startServer(t *testing.T, dir string, port int, maxPayload int32) *server.Server {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir,
		MaxPayload: maxPayload, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s
}

// Regression (left open in the nineteenth session, fixed in the
// twentieth): the service took its size limit from the connection's
// max_payload once, when it opened. After a reconnect to a server with a
// smaller max_payload (a restart with a new configuration, or another
// node of a cluster), an append the old limit allowed was refused by the
// client with nats.ErrMaxPayload, which was not a session too large: the
// worker Nak'ed the invocation as its own outage, and every redelivery
// ran the model and the tools again up to the run limit. The limit is now
// read from the connection at each append, and ErrMaxPayload is mapped to
// ErrSessionTooLarge as well.
func TestAppendAfterReconnectToASmallerMaxPayloadIsSessionTooLarge(t *testing.T) {
	dir := t.TempDir()
	first := startServer(t, dir, -1, 0)
	addr := first.Addr().String()
	port := first.Addr().(*net.TCPAddr).Port
	reconnected := make(chan struct{}, 1)
	nc, err := nats.Connect("nats://"+addr, nats.ReconnectWait(20*time.Millisecond), nats.MaxReconnects(-1),
		nats.ReconnectHandler(func(*nats.Conn) { reconnected <- struct{}{} }))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := natssession.NewService(ctx, js, natssession.Config{})
	if err != nil {
		t.Fatal(err)
	}
	k := session.Key{App: "support", UserID: "u1", SessionID: "s1"}
	if err := svc.AppendEvent(ctx, k, &session.Event{InvocationID: "i1", Author: "user",
		Content: model.NewTextContent(model.RoleUser, "hello")}); err != nil {
		t.Fatal(err)
	}

	// The server restarts with max_payload 64 KiB on the same port and
	// store; the client reconnects.
	first.Shutdown()
	first.WaitForShutdown()
	startServer(t, dir, port, 64*1024)
	select {
	case <-reconnected:
	case <-time.After(20 * time.Second):
		t.Fatal("no reconnect")
	}
	if got := nc.MaxPayload(); got != 64*1024 {
		t.Fatalf("test setup: max payload after reconnect %d, want 65536", got)
	}

	err = svc.AppendEvent(ctx, k, &session.Event{InvocationID: "i1", Author: "support",
		Content: model.NewTextContent(model.RoleModel, strings.Repeat("x", 200*1024))})
	if !errors.Is(err, natssession.ErrSessionTooLarge) {
		t.Fatalf("append of 200 KiB after a reconnect to a 64 KiB max_payload = %v; want ErrSessionTooLarge", err)
	}
	var tl *session.TooLargeError
	if !errors.As(err, &tl) || tl.Limit <= 0 || tl.Limit > 64*1024 {
		t.Fatalf("error %v: want a *session.TooLargeError naming a limit under 64 KiB", err)
	}
	// Nothing was stored: the session still holds its one event.
	s, err := svc.Get(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Events) != 1 {
		t.Fatalf("session holds %d events after the refused append, want 1", len(s.Events))
	}
}
