package natssession_test

import (
	"context"
	"net"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/pkg/agent/session/natssession"
)

// env is an embedded NATS server whose storage survives a restart, for the
// suites' Reopen: restart shuts the server down and starts a new one on the
// same directory and port, then connects again.
type env struct {
	dir  string
	port int
	srv  *server.Server
}

func newEnv(t *testing.T) *env {
	e := &env{dir: t.TempDir()}
	e.srv = natstest.RunServerAt(t, e.dir, -1)
	e.port = e.srv.Addr().(*net.TCPAddr).Port
	return e
}

// js returns a new connection's JetStream context.
func (e *env) js(t *testing.T) jetstream.JetStream {
	nc := natstest.Connect(t, e.srv)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// restart stops the server (it flushes its store) and starts it again on
// the same storage.
func (e *env) restart(t *testing.T) {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
	e.srv = natstest.RunServerAt(t, e.dir, e.port)
}

// config is the configuration the tests use: defaults, file storage.
func config() natssession.Config { return natssession.Config{} }

var ctx = context.Background()
