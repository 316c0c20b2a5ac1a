package worker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/redissession"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// The worker's whole record lifecycle on Redis through redissession.Gate
// (one round trip to enter and one to finish a completion): a new invocation
// completes; one fails and is dead-lettered; its replay finds the existing
// record, runs again and completes; a duplicate of a completed one runs
// nothing. The session lock is free after each, and the records count the
// runs.
func TestWorkerOnTheRedisGate(t *testing.T) {
	e := newEnv(t)
	rdb, locker, invs, gate, svc := redisSessionStores(t)
	e.deps = func(d *worker.Deps) {
		d.Locker, d.Invocations, d.Gate = locker, invs, gate
		d.Agents["support"].Sessions = svc
	}
	loads := &loadCounter{}
	rdb.AddHook(loads)

	llm := agenttest.NewScriptedModel(
		agenttest.Reply(agenttest.Text("first done")),
		agenttest.Fail(errors.New("something odd")),
		agenttest.Reply(agenttest.Text("replay done")),
	)
	w := e.startWorker("w1", e.supportAgent(llm), worker.Config{})
	ctx := context.Background()
	key := session.Key{App: "support", UserID: "u1", SessionID: "s1"}
	lockFree := func(what string) {
		t.Helper()
		eventually(t, what+": session lock free", func() bool {
			if _, err := locker.Acquire(ctx, key, "probe", time.Minute); err != nil {
				return false
			}
			return locker.Release(ctx, key, "probe") == nil
		})
	}
	record := func(id string) *session.Invocation {
		t.Helper()
		rec, err := invs.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}

	e.publish(request("inv-g1", "s1", "hi"), nil)
	if res := e.await("inv-g1"); res.Status != envelope.StatusCompleted || res.Content != "first done" {
		t.Fatalf("inv-g1: %+v", res)
	}
	lockFree("after a completion")
	if rec := record("inv-g1"); rec.Status != session.InvocationCompleted || rec.Attempts != 1 {
		t.Fatalf("inv-g1 record = %+v", rec)
	}
	// The session was read in the enter step's round trip, not on its own.
	if with, alone := loads.withEnter.Load(), loads.alone.Load(); with != 1 || alone != 0 {
		t.Fatalf("session reads: %d in the enter round trip, %d on their own; want 1 and 0", with, alone)
	}
	// The user message and the answer were stored by the finish script
	// with the completion record, not by an append of their own, and in
	// order.
	if alone := loads.appendOnly.Load(); alone != 0 {
		t.Fatalf("%d appends on their own; want none", alone)
	}
	if s, err := svc.Get(ctx, key); err != nil || authorsOf(s.InvocationEvents("inv-g1")) != "[user support]" {
		t.Fatalf("inv-g1's events = %v, %v; want the user message, then the answer", s, err)
	}

	e.publish(request("inv-g2", "s1", "hi"), nil)
	if res := e.await("inv-g2"); res.Status != envelope.StatusDeadLettered {
		t.Fatalf("inv-g2: %+v", res)
	}
	lockFree("after a dead letter")
	e.publishRaw(e.sc.RequestSubject("support"), mustJSON(t, request("inv-g2", "s1", "hi")), "replay:inv-g2:1",
		map[string]string{envelope.HeaderReplayCount: "1", envelope.HeaderResume: "true"})
	if res := e.await("inv-g2"); res.Status != envelope.StatusCompleted || res.Content != "replay done" {
		t.Fatalf("inv-g2 replay: %+v", res)
	}
	lockFree("after the replay")
	// The replay resumed: the user message of inv-g2 is stored once.
	sess, err := svc.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	users := 0
	for _, ev := range sess.InvocationEvents("inv-g2") {
		if ev.Author == session.AuthorUser {
			users++
		}
	}
	if users != 1 {
		t.Fatalf("inv-g2's user message is stored %d times, want 1", users)
	}
	if rec := record("inv-g2"); rec.Status != session.InvocationCompleted || rec.Attempts != 2 {
		t.Fatalf("inv-g2 record = %+v, want completed after 2 runs", rec)
	}

	e.publishRaw(e.sc.RequestSubject("support"), mustJSON(t, request("inv-g1", "s1", "hi")), "late-inv-g1",
		map[string]string{envelope.HeaderReplayCount: "1"})
	eventually(t, "duplicate acked", func() bool { return w.count("support", "duplicate") == 1 })
	if rec := record("inv-g1"); rec.Attempts != 1 {
		t.Fatalf("a duplicate ran inv-g1 again: %+v", rec)
	}
	lockFree("after a duplicate")
}

// loadCounter counts the round trips that read a session's events (with
// the enter script, or on their own) and the appends (transactions with an
// RPUSH).
type loadCounter struct {
	withEnter, alone atomic.Int32
	appendOnly       atomic.Int32
}

func (*loadCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *loadCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.count([]redis.Cmder{cmd})
		return next(ctx, cmd)
	}
}
func (c *loadCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.count(cmds)
		return next(ctx, cmds)
	}
}

// count classifies what cmds (one command or a pipeline) send: the enter
// script that also reads the session (its first of five keys the lock),
// a session read of its own (LRANGE), or an append of its own (RPUSH).
func (c *loadCounter) count(cmds []redis.Cmder) {
	var lrange, rpush, enter bool
	for _, cmd := range cmds {
		switch cmd.Name() {
		case "lrange":
			lrange = true
		case "rpush":
			rpush = true
		case "evalsha", "eval":
			args := cmd.Args()
			if len(args) > 3 && fmt.Sprint(args[2]) == "5" && strings.Contains(fmt.Sprint(args[3]), "lock:{") {
				enter = true
			}
		}
	}
	switch {
	case enter:
		c.withEnter.Add(1)
	case lrange:
		c.alone.Add(1)
	case rpush:
		c.appendOnly.Add(1)
	}
}

// lostReplyGate takes the lock and stores as the real Gate does, then
// reports a transport error without the lease, as when Redis's reply to
// the enter script is lost.
type lostReplyGate struct {
	session.Gate
	lost atomic.Bool
}

func (g *lostReplyGate) Enter(ctx context.Context, key session.Key, owner string, lease time.Duration, running *session.Invocation) (*session.Entry, error) {
	e, err := g.Gate.Enter(ctx, key, owner, lease, running)
	if err == nil && g.lost.CompareAndSwap(false, true) {
		return &session.Entry{}, errors.New("read tcp: i/o timeout")
	}
	return e, err
}

// An Enter whose reply was lost may have taken the lock: the worker gives
// it back at once (fenced by its owner token), so the redelivery does not
// wait out the lease (review finding).
func TestLockReleasedWhenEnterReplyIsLost(t *testing.T) {
	e := newEnv(t)
	g := &lostReplyGate{Gate: session.NewGate(e.locker, e.invs)}
	e.deps = func(d *worker.Deps) { d.Gate = g }
	w := e.startWorker("w1", e.supportAgent(agenttest.NewScriptedModel(agenttest.Reply(agenttest.Text("done")))),
		worker.Config{SessionLease: time.Hour})
	e.publish(request("inv-lost", "s1", "hi"), nil)
	if res := e.await("inv-lost"); res.Status != envelope.StatusCompleted {
		t.Fatalf("result = %+v", res)
	}
	if n := w.count("support", "nak_busy"); n != 0 {
		t.Fatalf("%v busy Naks: the lock of the lost Enter was not released", n)
	}
}

// authorsOf lists events' authors.
func authorsOf(evs []*session.Event) string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Author
	}
	return fmt.Sprint(out)
}

// redisSessionStores are the Redis client and session stores of one test
// (a key prefix of its own): the locker, the invocation records, the gate over
// both and the session service.
func redisSessionStores(t *testing.T) (*redis.Client, *redissession.Locker, *redissession.Invocations, *redissession.Gate, *redissession.Service) {
	t.Helper()
	rdb, prefix := redistest.Client(t)
	cfg := redissession.Config{Prefix: prefix}
	locker, err := redissession.NewLocker(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	invs, err := redissession.NewInvocations(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	gate, err := redissession.NewGate(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := redissession.New(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rdb, locker, invs, gate, svc
}
