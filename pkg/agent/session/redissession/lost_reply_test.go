package redissession_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/redissession"
)

// An append whose reply is lost is stored once: go-redis (with retries on)
// sends the append script again, and the script finds the events already
// pushed (review finding: go-redis retries a plain pipeline after a read
// error, which stored the events twice).
func TestAppendWithALostReplyIsNotRepeated(t *testing.T) {
	rdb, prefix := redistest.Client(t)
	p := redistest.NewReplyDropper(t, rdb.Options().Addr, "lost-reply-marker")
	opts := *rdb.Options()
	opts.Addr = p.Addr()
	proxied := redis.NewClient(&opts) // go-redis defaults: MaxRetries 3
	t.Cleanup(func() { proxied.Close() })
	svc, err := redissession.New(proxied, redissession.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// The append script is loaded first, so the request whose reply is
	// lost is one that ran (not an EVALSHA answered NOSCRIPT).
	warm := session.Key{App: "a", UserID: "u", SessionID: "warm"}
	if err := svc.AppendEvent(ctx, warm, &session.Event{InvocationID: "w", Author: "support", Content: model.NewTextContent(model.RoleModel, "warm")}); err != nil {
		t.Fatal(err)
	}
	k := session.Key{App: "a", UserID: "u", SessionID: "s"}
	ev := &session.Event{InvocationID: "i1", Author: "support", Content: model.NewTextContent(model.RoleModel, "lost-reply-marker")}
	_ = svc.AppendEvent(ctx, k, ev) // the error, if any, is the caller's to handle
	if !p.Dropped() {
		t.Fatal("the proxy never saw the append")
	}
	direct, err := redissession.New(rdb, redissession.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	s, err := direct.Get(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Events) != 1 {
		t.Fatalf("the session holds %d events after one append whose reply was lost, want 1", len(s.Events))
	}
}

// proxiedClient returns a proxy that drops the reply to the first request
// holding marker, a client through it that sends a command again after a
// lost reply, a direct client, and a Config with a key prefix of the
// test's own.
func proxiedClient(t *testing.T, marker string) (*redistest.ReplyDropper, *redis.Client, *redis.Client, redissession.Config) {
	t.Helper()
	rdb, prefix := redistest.Client(t)
	p := redistest.NewReplyDropper(t, rdb.Options().Addr, marker)
	opts := *rdb.Options()
	opts.Addr = p.Addr()
	opts.MaxRetries = 3 // sends a command again after a lost reply
	proxied := redis.NewClient(&opts)
	t.Cleanup(func() { proxied.Close() })
	return p, proxied, rdb, redissession.Config{Prefix: prefix}
}

// proxiedParts returns Invocations and a Gate on a client through a proxy
// that drops the reply to the first request holding marker (the client
// sends a command again after a lost reply), and Invocations
// on a direct client to the same keys. The scripts are loaded first, so
// the request whose reply is lost is one that ran.
func proxiedParts(t *testing.T, marker string) (*redistest.ReplyDropper, *redissession.Gate, *redissession.Invocations, *redissession.Invocations) {
	t.Helper()
	p, proxied, rdb, cfg := proxiedClient(t, marker)
	g, err := redissession.NewGate(proxied, cfg)
	if err != nil {
		t.Fatal(err)
	}
	invp, err := redissession.NewInvocations(proxied, cfg)
	if err != nil {
		t.Fatal(err)
	}
	direct, err := redissession.NewInvocations(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	warm := session.Key{App: "a", UserID: "u", SessionID: "warm"}
	if _, err := g.Enter(ctx, warm, "w0", time.Minute, &session.Invocation{ID: "warm", Session: warm, Status: session.InvocationRunning}); err != nil {
		t.Fatal(err)
	}
	if err := direct.Transition(ctx, &session.Invocation{ID: "warm", Session: warm, Status: session.InvocationFailed}); err != nil {
		t.Fatal(err)
	}
	return p, g, invp, direct
}

// An Enter whose reply was lost and which the client library sent again
// answers as the first run did: a new invocation (no Existing record), run
// once (review finding: the resent script found the running record the
// first had stored and returned it as an existing one, so the worker
// counted a second run and marked it running again, attempts 2).
func TestEnterWithALostReplyIsANewInvocation(t *testing.T) {
	p, g, _, direct := proxiedParts(t, "lost-reply-marker")
	ctx := context.Background()
	k := session.Key{App: "a", UserID: "u", SessionID: "s"}
	r := &session.Invocation{ID: "i1", Session: k, Status: session.InvocationRunning, Result: []byte(`"lost-reply-marker"`)}
	e, err := g.Enter(ctx, k, "w1", time.Minute, r)
	if !p.Dropped() {
		t.Fatal("the proxy never saw the enter")
	}
	if err != nil {
		t.Fatalf("the script was sent again: %v", err)
	}
	if e.Lease == nil || e.Existing != nil || r.Attempts != 1 {
		t.Fatalf("Enter after a lost reply = lease %v, existing %+v, attempts %d; want a lease, no existing record, attempts 1", e.Lease, e.Existing, r.Attempts)
	}
	if got, err := direct.Get(ctx, "i1"); err != nil || got.Attempts != 1 || got.Status != session.InvocationRunning {
		t.Fatalf("stored = %+v, %v; want running, attempts 1", got, err)
	}
}

// A running transition whose reply was lost and which the client library
// sent again counts one run, not two (review finding: each resend added
// one to attempts, bringing the invocation closer to its run limit).
func TestTransitionWithALostReplyCountsOnce(t *testing.T) {
	p, _, invp, direct := proxiedParts(t, "lost-reply-marker")
	ctx := context.Background()
	if err := direct.Transition(ctx, &session.Invocation{ID: "i1", Status: session.InvocationFailed}); err != nil {
		t.Fatal(err)
	}
	r := &session.Invocation{ID: "i1", Status: session.InvocationRunning, Result: []byte(`"lost-reply-marker"`)}
	err := invp.Transition(ctx, r)
	if !p.Dropped() {
		t.Fatal("the proxy never saw the transition")
	}
	if err != nil {
		t.Fatalf("the script was sent again: %v", err)
	}
	if r.Attempts != 1 {
		t.Fatalf("Transition after a lost reply: attempts %d, want 1", r.Attempts)
	}
	if got, err := direct.Get(ctx, "i1"); err != nil || got.Attempts != 1 || got.Status != session.InvocationRunning {
		t.Fatalf("stored = %+v, %v; want running, attempts 1", got, err)
	}
}
