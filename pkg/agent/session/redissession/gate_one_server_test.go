package redissession_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/redissession"
)

// Regression (found in review, twenty-third session): NewGate refused only
// a *redis.ClusterClient, so a redis.Ring was accepted and its Enter and
// Finish scripts split the lock and the record across shards.
//
// NewGate refuses a Cluster client because its scripts touch a session's
// lock and an invocation's record, which have different hash tags. A
// redis.Ring (a redis.UniversalClient that shards by key on the client)
// has the same problem but is accepted: each script runs on the shard of
// its first key, so Enter writes the record on the lock's shard and Finish
// (first key: the record) looks for the lock on the record's shard. Finish
// then reports the lock released while it is still held, and the running
// record Enter stored stays where the next Enter reads it. The test uses
// two shards on one server (two databases).
func TestGateOnARingIsRefusedOrReleasesTheLock(t *testing.T) {
	base, prefix := redistest.Client(t)
	opts := base.Options()
	if !strings.HasPrefix(opts.Addr, "127.0.0.1:") {
		t.Skipf("REDIS_URL host %q: the test builds its second shard name from 127.0.0.1", opts.Addr)
	}
	otherDB := (opts.DB + 1) % 16
	ring := redis.NewRing(&redis.RingOptions{
		Addrs: map[string]string{"s1": opts.Addr, "s2": "localhost" + opts.Addr[len("127.0.0.1"):]},
		NewClient: func(o *redis.Options) *redis.Client {
			o.DB = opts.DB
			if o.Addr != opts.Addr {
				o.DB = otherDB
			}
			o.Password, o.Username = opts.Password, opts.Username
			return redis.NewClient(o)
		},
	})
	t.Cleanup(func() { ring.Close() })
	other := redis.NewClient(&redis.Options{Addr: opts.Addr, DB: otherDB, Username: opts.Username, Password: opts.Password})
	t.Cleanup(func() {
		ctx := context.Background()
		if keys, err := other.Keys(ctx, prefix+"*").Result(); err == nil && len(keys) > 0 {
			other.Del(ctx, keys...)
		}
		other.Close()
	})
	ctx := context.Background()
	if err := ring.Ping(ctx).Err(); err != nil {
		t.Skipf("ring not reachable: %v", err)
	}
	cfg := redissession.Config{Prefix: prefix}
	g, err := redissession.NewGate(ring, cfg)
	if errors.Is(err, redissession.ErrClusterGate) {
		return // refused, as a Cluster client is: the fix
	}
	if err != nil {
		t.Fatalf("NewGate(ring) = %v, want ErrClusterGate", err)
	}
	l, err := redissession.NewLocker(ring, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Find a session whose lock and an invocation whose record land on
	// different shards: Enter for it stores no record where Get reads.
	invs, err := redissession.NewInvocations(ring, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 64 {
		k := session.Key{App: "a", UserID: "u", SessionID: fmt.Sprintf("s%d", i)}
		id := fmt.Sprintf("inv-%d", i)
		e, err := g.Enter(ctx, k, "w1", time.Minute, &session.Invocation{ID: id, Session: k, Status: session.InvocationRunning})
		if err != nil || e.Lease == nil {
			t.Fatalf("Enter = %+v, %v", e, err)
		}
		if _, err := invs.Get(ctx, id); err == nil {
			_, _ = g.Finish(ctx, &session.Invocation{ID: id, Session: k, Status: session.InvocationFailed}, k, "w1")
			continue // same shard: try another pair
		}
		released, err := g.Finish(ctx, &session.Invocation{ID: id, Session: k, Status: session.InvocationCompleted, Result: []byte(`"ok"`)}, k, "w1")
		if err != nil || !released {
			t.Fatalf("Finish = %v, %v", released, err)
		}
		if _, err := l.Acquire(ctx, k, "w2", time.Minute); errors.Is(err, session.ErrLocked) {
			t.Fatalf("NewGate accepted a redis.Ring; Finish of %s said the lock was released, but another owner finds it held: %v", id, err)
		}
		e2, err := g.Enter(ctx, k, "w2", time.Minute, &session.Invocation{ID: id, Session: k, Status: session.InvocationRunning})
		if err == nil && (e2.Existing == nil || e2.Existing.Status != session.InvocationCompleted) {
			t.Fatalf("NewGate accepted a redis.Ring; after Finish stored %s completed, Enter finds %+v: it would run again", id, e2.Existing)
		}
		return
	}
	t.Skip("no session/invocation pair on different shards found")
}

// NewGate takes a client of one server, plain or auto-pipelined, and
// refuses a Cluster client, plain or auto-pipelined, and a Ring (which has
// no auto-pipeliner) with ErrClusterGate, without a server to ask (the
// addresses do not answer).
func TestGateAcceptsOnlyAClientOfOneServer(t *testing.T) {
	const nowhere = "127.0.0.1:1"
	c := redis.NewClient(&redis.Options{Addr: nowhere})
	t.Cleanup(func() { c.Close() })
	pipe, err := c.AutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nowhere}})
	t.Cleanup(func() { cl.Close() })
	clpipe, err := cl.AutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"s1": nowhere}})
	t.Cleanup(func() { ring.Close() })
	for _, tc := range []struct {
		name string
		rdb  redis.UniversalClient
		ok   bool
	}{
		{"client", c, true},
		{"auto-pipelined client", pipe, true},
		{"cluster", cl, false},
		{"auto-pipelined cluster", clpipe, false},
		{"ring", ring, false},
	} {
		_, err := redissession.NewGate(tc.rdb, redissession.Config{})
		if tc.ok && err != nil {
			t.Errorf("NewGate(%s) = %v, want a gate", tc.name, err)
		}
		if !tc.ok && !errors.Is(err, redissession.ErrClusterGate) {
			t.Errorf("NewGate(%s) = %v, want ErrClusterGate", tc.name, err)
		}
	}
}
