// Package natstest starts real, in-process nats-server instances with
// JetStream for tests: Port -1 (a free port), storage in t.TempDir(), shut
// down when the test ends.
package natstest

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// RunServer starts an embedded JetStream server for t.
func RunServer(t testing.TB) *server.Server {
	t.Helper()
	return RunServerAt(t, t.TempDir(), -1)
}

// RunServerAt starts an embedded JetStream server storing under dir and
// listening on port (-1 for a free one). Restarting on the same dir and port
// models a NATS restart that keeps its streams.
func RunServerAt(t testing.TB, dir string, port int) *server.Server {
	t.Helper()
	opts := &server.Options{
		Host:      "127.0.0.1",
		Port:      port,
		JetStream: true,
		StoreDir:  dir,
		NoLog:     true,
		NoSigs:    true,
	}
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatalf("natstest: new server: %v", err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		t.Fatal("natstest: server not ready")
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}

// Connect connects to s and closes the connection when the test ends.
func Connect(t testing.TB, s *server.Server) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(s.ClientURL(), nats.Name(t.Name()))
	if err != nil {
		t.Fatalf("natstest: connect: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// JetStream starts a server and returns a JetStream context on it.
func JetStream(t testing.TB) (jetstream.JetStream, *nats.Conn, *server.Server) {
	t.Helper()
	s := RunServer(t)
	nc := Connect(t, s)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("natstest: jetstream: %v", err)
	}
	return js, nc, s
}

// BucketMaxAge returns a KV bucket's max age as the server has it (0: no
// limit).
func BucketMaxAge(t testing.TB, js jetstream.JetStream, bucket string) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		t.Fatalf("natstest: bucket %s: %v", bucket, err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		t.Fatalf("natstest: bucket %s status: %v", bucket, err)
	}
	return st.TTL()
}
