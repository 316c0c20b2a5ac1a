package natssession_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/natssession"
)

// nats29Bin is the machine's NATS 2.9 server binary (DESIGN.md's services).
const nats29Bin = "/usr/sbin/nats-server"

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// run29Cluster starts three nats-server 2.9 processes as one JetStream
// cluster and returns their client URLs; the processes are killed (by their
// own PIDs) when the test ends.
func run29Cluster(t *testing.T) []string {
	t.Helper()
	if _, err := os.Stat(nats29Bin); err != nil {
		t.Skipf("%s: %v", nats29Bin, err)
	}
	out, err := exec.Command(nats29Bin, "--version").Output()
	if err != nil || !strings.Contains(string(out), "v2.9.") {
		t.Skipf("%s is not a 2.9 server: %s %v", nats29Bin, out, err)
	}
	const n = 3
	cports, rports := make([]int, n), make([]int, n)
	for i := range n {
		cports[i], rports[i] = freePort(t), freePort(t)
	}
	var routes []string
	for _, p := range rports {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
	}
	dir := t.TempDir()
	var urls []string
	for i := range n {
		conf := fmt.Sprintf(`server_name: r10e-%d
listen: 127.0.0.1:%d
jetstream { store_dir: %q }
cluster { name: r10e, listen: 127.0.0.1:%d, routes: [%s] }
`, i, cports[i], filepath.Join(dir, fmt.Sprint(i)), rports[i], strings.Join(routes, ", "))
		cf := filepath.Join(dir, fmt.Sprintf("s%d.conf", i))
		if err := os.WriteFile(cf, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(nats29Bin, "-c", cf, "-l", filepath.Join(dir, fmt.Sprintf("s%d.log", i)))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", cports[i]))
	}
	return urls
}

// TestLockExclusionOnNATS29Cluster: DESIGN.md requires NATS 2.9+
// and the fleet keeps its buckets at R3, but before 2.9.21 a clustered
// stream checks Nats-Expected-Last-Subject-Sequence only before proposing
// (nats-server #4320): concurrent Creates/Updates at one revision can all be
// accepted. The Locker (and the idempotency claim, the invocation records)
// rely on exactly that check, so on a 2.9.<21 cluster several owners get the
// same session lock. Opening a replicated bucket on such a server is now
// refused (kvbucket.RequireRevisionChecks); the race runs only if it is not.
func TestLockExclusionOnNATS29Cluster(t *testing.T) {
	urls := run29Cluster(t)
	var js jetstream.JetStream
	var l *natssession.Locker
	deadline := time.Now().Add(60 * time.Second)
	for {
		nc, err := nats.Connect(urls[0])
		if err == nil {
			js, _ = jetstream.New(nc)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			l, err = natssession.NewLocker(ctx, js, natssession.Config{Replicas: 3, LockBucket: "r10e_locks"})
			cancel()
			if err == nil {
				t.Cleanup(nc.Close)
				t.Logf("server %s", nc.ConnectedServerVersion())
				break
			}
			nc.Close()
			if strings.Contains(err.Error(), "2.9.21") || strings.Contains(err.Error(), "version") {
				return // refused: the fix this test asks for
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster never ready: %v", err)
		}
		time.Sleep(200 * time.Millisecond) // waiting for the external processes to form a cluster
	}
	// Contenders on their own connections, spread over the servers.
	const contenders = 12
	lockers := make([]*natssession.Locker, contenders)
	for i := range contenders {
		nc, err := nats.Connect(urls[i%len(urls)])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		cjs, _ := jetstream.New(nc)
		if lockers[i], err = natssession.NewLocker(context.Background(), cjs, natssession.Config{Replicas: 3, LockBucket: "r10e_locks", OpenExisting: true}); err != nil {
			t.Fatal(err)
		}
	}
	_ = l
	if st, err := js.Stream(context.Background(), "KV_r10e_locks"); err != nil || st.CachedInfo().Config.Replicas != 3 || st.CachedInfo().Cluster == nil || len(st.CachedInfo().Cluster.Replicas) != 2 {
		t.Fatalf("bucket not R3: %v %+v", err, st.CachedInfo().Cluster)
	}
	for round := range 300 {
		k := session.Key{App: "support", UserID: "u1", SessionID: fmt.Sprint("s-", round)}
		if round%2 == 1 {
			// A held lock whose 1ms lease has run out: the contenders race
			// the takeover (Update at the same revision).
			if _, err := l.Acquire(context.Background(), k, "crashed", time.Millisecond); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var winners []string
		start := make(chan struct{})
		for i := range contenders {
			wg.Go(func() {
				owner := fmt.Sprintf("worker-%d", i)
				<-start
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if _, err := lockers[i].Acquire(ctx, k, owner, time.Minute); err == nil {
					mu.Lock()
					winners = append(winners, owner)
					mu.Unlock()
				}
			})
		}
		close(start)
		wg.Wait()
		if len(winners) > 1 {
			t.Fatalf("round %d: %d owners hold the same session lock at once: %v", round, len(winners), winners)
		}
	}
}
