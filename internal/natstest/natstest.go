// Package natstest starts real, in-process nats-server instances with
// JetStream for tests: Port -1 (a free port), storage in t.TempDir(), shut
// down when the test ends.
package natstest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
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

// RunCluster starts n embedded JetStream servers routed into one cluster on
// loopback (client ports picked by the servers, route ports picked free just
// before they start, storage in t.TempDir()) and waits until every server is
// current with the JetStream meta group and the meta leader places an
// n-replica stream. A cluster that does not form in time is shut down and
// started again on fresh ports (three tries), and the servers' own logs are
// shown when the last try fails. The servers shut down when the test ends.
//
// Even then the first stream operations on a new cluster may go unanswered
// now and then (the reply is lost while the group settles), so a test's
// JetStream calls on it go through Retry.
func RunCluster(t testing.TB, n int) []*server.Server {
	t.Helper()
	if n < 1 {
		t.Fatalf("natstest: cluster of %d servers", n)
	}
	var logs *clusterLog
	for try := 1; try <= 3; try++ {
		var servers []*server.Server
		var err error
		servers, logs, err = startCluster(t, n)
		if err == nil {
			t.Cleanup(func() { shutdown(servers) })
			return servers
		}
		shutdown(servers)
		t.Logf("natstest: cluster of %d, try %d: %v", n, try, err)
	}
	t.Fatalf("natstest: cluster of %d did not form; the servers' logs of the last try:\n%s", n, logs)
	return nil
}

func startCluster(t testing.TB, n int) ([]*server.Server, *clusterLog, error) {
	logs := &clusterLog{}
	// Every server gets every route up front (a clustered JetStream server
	// needs its routes configured), so the route ports are picked first.
	ports := make([]int, n)
	routes := make([]*url.URL, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, logs, fmt.Errorf("free port: %w", err)
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		routes[i] = &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", ports[i])}
	}
	var servers []*server.Server
	for i := range n {
		s, err := server.NewServer(&server.Options{
			ServerName: fmt.Sprintf("n%d", i+1),
			Host:       "127.0.0.1",
			Port:       -1,
			JetStream:  true,
			StoreDir:   t.TempDir(),
			NoSigs:     true,
			Cluster:    server.ClusterOpts{Name: "natstest", Host: "127.0.0.1", Port: ports[i]},
			Routes:     routes,
		})
		if err != nil {
			return servers, logs, fmt.Errorf("new server %d: %w", i+1, err)
		}
		s.SetLogger(logs.server(fmt.Sprintf("n%d", i+1)), false, false)
		go s.Start()
		servers = append(servers, s)
	}
	for i, s := range servers {
		if !s.ReadyForConnections(20 * time.Second) {
			return servers, logs, fmt.Errorf("server %d not ready for connections", i+1)
		}
	}
	// The meta group forms once the routes are up and a leader is elected;
	// poll the servers' own state (a condition, not a fixed sleep).
	deadline := time.Now().Add(20 * time.Second)
	for {
		ready, leader := true, false
		for _, s := range servers {
			if s.NumRoutes() < n-1 || !s.JetStreamIsCurrent() {
				ready = false
			}
			// Only the leader answers with the peers it has heard from.
			if s.JetStreamIsLeader() && len(s.JetStreamClusterPeers()) >= n {
				leader = true
			}
		}
		if ready && leader && canPlace(servers[0].ClientURL(), n) {
			return servers, logs, nil
		}
		if time.Now().After(deadline) {
			return servers, logs, fmt.Errorf("no JetStream meta group that places %d replicas", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func shutdown(servers []*server.Server) {
	for _, s := range servers {
		s.Shutdown()
	}
	for _, s := range servers {
		s.WaitForShutdown()
	}
}

// Retry runs f until it returns nil, each try with its own deadline (10 s),
// for at most total, and fails the test with the last error. f must be
// idempotent (creating or updating streams and buckets is).
func Retry(t testing.TB, total time.Duration, f func(ctx context.Context) error) {
	t.Helper()
	deadline := time.Now().Add(total)
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), min(10*time.Second, time.Until(deadline)))
		err := f(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("natstest: still failing after %d tries: %v", try, err)
		}
		t.Logf("natstest: try %d: %v; trying again", try, err)
	}
}

// clusterLog keeps the cluster's server logs in memory, to show them when
// the cluster does not form.
type clusterLog struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *clusterLog) String() string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *clusterLog) server(name string) server.Logger { return &serverLog{name: name, to: l} }

// serverLog is one server's server.Logger into a clusterLog (notices,
// warnings, errors; no debug or trace).
type serverLog struct {
	name string
	to   *clusterLog
}

func (s *serverLog) line(level, format string, v []any) {
	s.to.mu.Lock()
	defer s.to.mu.Unlock()
	fmt.Fprintf(&s.to.buf, "%s %s [%s] "+format+"\n", append([]any{time.Now().Format("15:04:05.000"), s.name, level}, v...)...)
}

func (s *serverLog) Noticef(format string, v ...any) { s.line("INF", format, v) }
func (s *serverLog) Warnf(format string, v ...any)   { s.line("WRN", format, v) }
func (s *serverLog) Fatalf(format string, v ...any)  { s.line("FTL", format, v) }
func (s *serverLog) Errorf(format string, v ...any)  { s.line("ERR", format, v) }
func (s *serverLog) Debugf(string, ...any)           {}
func (s *serverLog) Tracef(string, ...any)           {}

// ConnectURL connects to the server at url (for example a cluster member's
// ClientURL) and closes the connection when the test ends.
func ConnectURL(t testing.TB, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, nats.Name(t.Name()))
	if err != nil {
		t.Fatalf("natstest: connect %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// canPlace reports whether the cluster places an n-replica stream now: the
// meta leader needs every peer's stats before it does, which comes after
// the group is current. The probe stream is deleted again.
func canPlace(url string, n int) bool {
	nc, err := nats.Connect(url)
	if err != nil {
		return false
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	const probe = "NATSTEST_PLACEMENT_PROBE"
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: probe, Subjects: []string{"natstest.probe"}, Replicas: n}); err != nil {
		return false
	}
	return js.DeleteStream(ctx, probe) == nil
}

// ClusterJetStream starts a cluster of n servers (RunCluster) and returns a
// JetStream context on a connection to its first server.
func ClusterJetStream(t testing.TB, n int) (jetstream.JetStream, []*server.Server) {
	t.Helper()
	servers := RunCluster(t, n)
	js, err := jetstream.New(ConnectURL(t, servers[0].ClientURL()))
	if err != nil {
		t.Fatalf("natstest: jetstream: %v", err)
	}
	return js, servers
}

// JetStreamPerServer returns a JetStream context on a connection of its own
// to each of servers (a cluster's nodes), in their order: a test that reads
// through every node sees what each replica answers.
func JetStreamPerServer(t testing.TB, servers []*server.Server) []jetstream.JetStream {
	t.Helper()
	out := make([]jetstream.JetStream, len(servers))
	for i, s := range servers {
		js, err := jetstream.New(ConnectURL(t, s.ClientURL()))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = js
	}
	return out
}
