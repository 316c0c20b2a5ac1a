package redissession

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// gateAndService returns a Gate and a Service on one client under a key
// prefix of their own.
func gateAndService(t *testing.T) (*redis.Client, *Gate, *Service) {
	t.Helper()
	rdb, prefix := redistest.Client(t)
	cfg := Config{Prefix: prefix}
	g, err := NewGate(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := New(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rdb, g, svc
}

// refTransitionScript is the generic transition as it was before the
// scripts learned to skip its reads (commit 2d68fa5), verbatim: the
// reference the scripts' records are compared with.
var refTransitionScript = redis.NewScript(`
local function transition(key, id, status, sess, result, err, now, retention)
  local cur = redis.call('HMGET', key, 'status', 'created_at')
  if cur[1] == 'completed' then
    return {0, redis.call('HGETALL', key)}
  end
  local created = cur[2] or now
  local running = status == 'running'
  local attempts = redis.call('HINCRBY', key, 'attempts', running and 1 or 0)
  if running then
    redis.call('HDEL', key, 'finished_at')
    redis.call('HSET', key, 'id', id, 'status', status, 'session', sess,
      'result', result, 'error', err, 'updated_at', now, 'created_at', created)
  else
    redis.call('HSET', key, 'id', id, 'status', status, 'session', sess,
      'result', result, 'error', err, 'updated_at', now, 'created_at', created, 'finished_at', now)
  end
  redis.call('PEXPIRE', key, retention)
  return {1, {created, tostring(attempts)}}
end

return transition(KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7])
`)

// refStore stores records with refTransitionScript.
type refStore struct{ inv *Invocations }

func (r refStore) Transition(ctx context.Context, rec *session.Invocation) error {
	args, now, err := r.inv.transitionArgs(rec)
	if err != nil {
		return err
	}
	res, err := refTransitionScript.Run(ctx, r.inv.rdb, []string{r.inv.cfg.invocationKey(rec.ID)}, args...).Slice()
	if err != nil {
		return err
	}
	return applyTransitionReply(rec, now, res)
}

// TestGateWritesWhatTransitionWrites checks that the scripts, which skip
// reads and counts the old generic transition made, leave each record field
// for field as that transition (refTransitionScript) did: records a, c and
// e are written by the reference, b, d and f by the code under test: a new
// running record (Enter), its completion (Finish), a second run
// (Transition) and its completion with events (FinishWithEvents), and a
// terminal record over none (FinishWithEvents).
func TestGateWritesWhatTransitionWrites(t *testing.T) {
	rdb, g, svc := gateAndService(t)
	ctx := context.Background()
	clock := time.Date(2026, 12, 1, 8, 0, 0, 123, time.UTC)
	g.invs.now = func() time.Time { return clock }
	ref, cur := refStore{g.invs}, g.invs
	store := func(id string) interface {
		Transition(context.Context, *session.Invocation) error
	} {
		if id == "c" {
			return ref
		}
		return cur
	}

	hash := func(id string) map[string]string {
		t.Helper()
		m, err := rdb.HGetAll(ctx, g.invs.cfg.invocationKey(id)).Result()
		if err != nil {
			t.Fatal(err)
		}
		// Every transition gives the record the whole retention.
		if ttl, want := rdb.PTTL(ctx, g.invs.cfg.invocationKey(id)).Val(), g.invs.cfg.InvocationRetention; ttl < want-time.Minute || ttl > want {
			t.Errorf("record %s: TTL %v, want the retention %v", id, ttl, want)
		}
		m = maps.Clone(m)
		if m["id"] != id || !strings.Contains(m["session"], `"session_id":"s`+id+`"`) {
			t.Errorf("record %s: id %q, session %s", id, m["id"], m["session"])
		}
		delete(m, "id")
		delete(m, "session") // each record names its own session
		return m
	}
	same := func(what, generic, gate string) {
		t.Helper()
		a, b := hash(generic), hash(gate)
		if !maps.Equal(a, b) {
			t.Errorf("%s:\ntransition %v\ngate       %v", what, a, b)
		}
	}
	key := func(s string) session.Key { return session.Key{App: "support", UserID: "u", SessionID: s} }
	running := func(id, s string) *session.Invocation {
		return &session.Invocation{ID: id, Session: key(s), Status: session.InvocationRunning, Result: []byte(`{"replay_count":0}`)}
	}
	done := func(id, s string) *session.Invocation {
		return &session.Invocation{ID: id, Session: key(s), Status: session.InvocationCompleted, Result: []byte(`{"status":"completed"}`)}
	}
	failed := func(id, s string) *session.Invocation {
		return &session.Invocation{ID: id, Session: key(s), Status: session.InvocationFailed, Error: "AUTH"}
	}
	ev := func(id string) []*session.Event {
		return []*session.Event{{InvocationID: id, Author: "support", Timestamp: clock}}
	}

	// A new running record.
	if err := ref.Transition(ctx, running("a", "sa")); err != nil {
		t.Fatal(err)
	}
	rb := running("b", "sb")
	e, err := g.Enter(ctx, key("sb"), "owner-b", time.Minute, rb)
	if err != nil || e.Lease == nil || e.Existing != nil {
		t.Fatalf("enter: %+v %v", e, err)
	}
	if rb.Attempts != 1 || !rb.CreatedAt.Equal(clock) || !rb.UpdatedAt.Equal(clock) || !rb.FinishedAt.IsZero() {
		t.Errorf("Enter's record: attempts %d created %v updated %v finished %v; want 1, %v, %v, none",
			rb.Attempts, rb.CreatedAt, rb.UpdatedAt, rb.FinishedAt, clock, clock)
	}
	same("new running record", "a", "b")

	// A second run (attempts 2), then the completion over it.
	clock = clock.Add(time.Second)
	if err := ref.Transition(ctx, done("a", "sa")); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Finish(ctx, done("b", "sb"), key("sb"), "owner-b"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"c", "d"} {
		if err := store(id).Transition(ctx, running(id, "s"+id)); err != nil {
			t.Fatal(err)
		}
	}
	clock = clock.Add(time.Second)
	for _, id := range []string{"c", "d"} {
		if err := store(id).Transition(ctx, failed(id, "s"+id)); err != nil {
			t.Fatal(err)
		}
	}
	clock = clock.Add(time.Second)
	if err := ref.Transition(ctx, running("c", "sc")); err != nil { // attempts 2
		t.Fatal(err)
	}
	if _, err := g.Enter(ctx, key("sd"), "owner-d", time.Minute, running("d", "sd")); err != nil {
		t.Fatal(err)
	}
	if err := cur.Transition(ctx, running("d", "sd")); err != nil { // the worker's transition of an existing record
		t.Fatal(err)
	}
	same("second run", "c", "d")
	clock = clock.Add(time.Second)
	if err := ref.Transition(ctx, done("c", "sc")); err != nil {
		t.Fatal(err)
	}
	if _, err := g.FinishWithEvents(ctx, done("d", "sd"), key("sd"), "owner-d", svc, ev("d")); err != nil {
		t.Fatal(err)
	}
	same("completion of a second run, with events", "c", "d")
	if m := hash("d"); m["attempts"] != "2" || m["finished_at"] == "" {
		t.Errorf("completed record %v: want attempts 2 and finished_at", m)
	}

	// A terminal record where none was (attempts 0).
	if err := ref.Transition(ctx, failed("e", "se")); err != nil {
		t.Fatal(err)
	}
	if _, err := g.locker.Acquire(ctx, key("sf"), "owner-f", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := g.FinishWithEvents(ctx, failed("f", "sf"), key("sf"), "owner-f", svc, ev("f")); err != nil {
		t.Fatal(err)
	}
	same("terminal record over none", "e", "f")
	if m := hash("f"); m["attempts"] != "0" {
		t.Errorf("record %v: want attempts 0", m)
	}
}

// storePaths are the three ways a record is stored over the one Enter made
// (lock owner "owner"), each for a status: the transition, Finish, and
// FinishWithEvents with one event.
func storePaths(ctx context.Context, g *Gate, svc *Service, sk session.Key, rec func(session.InvocationStatus) *session.Invocation) map[string]func(session.InvocationStatus) error {
	return map[string]func(session.InvocationStatus) error{
		"Transition": func(st session.InvocationStatus) error { return g.invs.Transition(ctx, rec(st)) },
		"Finish": func(st session.InvocationStatus) error {
			_, err := g.Finish(ctx, rec(st), sk, "owner")
			return err
		},
		"FinishWithEvents": func(st session.InvocationStatus) error {
			r := rec(st)
			_, err := g.FinishWithEvents(ctx, r, sk, "owner", svc, []*session.Event{{InvocationID: r.ID, Author: "support"}})
			return err
		},
	}
}

// TestNonIntegerAttemptsWriteNothing: a record whose attempts field is not
// an integer (the generic transition's HINCRBY refuses it) makes every
// script that stores a record fail before it writes anything: the record
// stays as it was, no events are pushed, and the lock stays with its owner.
func TestNonIntegerAttemptsWriteNothing(t *testing.T) {
	rdb, g, svc := gateAndService(t)
	ctx := context.Background()
	for i, bad := range []string{"abc", "", " 2", "1.5", "02", "0x10", "1e2", "inf"} {
		id, sk := fmt.Sprintf("bad-%d", i), session.Key{App: "support", UserID: "u", SessionID: fmt.Sprintf("s%d", i)}
		rec := func(st session.InvocationStatus) *session.Invocation {
			return &session.Invocation{ID: id, Session: sk, Status: st, Result: []byte(`{}`)}
		}
		if _, err := g.Enter(ctx, sk, "owner", time.Minute, rec(session.InvocationRunning)); err != nil {
			t.Fatal(err)
		}
		rkey := g.invs.cfg.invocationKey(id)
		rdb.HSet(ctx, rkey, "attempts", bad)
		before, ttl := rdb.HGetAll(ctx, rkey).Val(), rdb.PTTL(ctx, rkey).Val()
		ks := g.locker.cfg.sessionKeys(sk)
		paths := storePaths(ctx, g, svc, sk, rec)
		for _, c := range []struct {
			name, path string
			st         session.InvocationStatus
		}{
			{"Transition", "Transition", session.InvocationFailed},
			{"Finish", "Finish", session.InvocationCompleted},
			{"FinishWithEvents", "FinishWithEvents", session.InvocationCompleted},
			{"Transition running", "Transition", session.InvocationRunning},
			{"Finish running", "Finish", session.InvocationRunning},
			{"FinishWithEvents running", "FinishWithEvents", session.InvocationRunning},
		} {
			name, run := c.name, func() error { return paths[c.path](c.st) }
			if err := run(); err == nil || !strings.Contains(err.Error(), "not an integer") {
				t.Errorf("attempts %q: %s: err %v, want the integer error", bad, name, err)
			}
			if after := rdb.HGetAll(ctx, rkey).Val(); !maps.Equal(before, after) {
				t.Errorf("attempts %q: %s changed the record:\n%v\n%v", bad, name, before, after)
			}
			if after := rdb.PTTL(ctx, rkey).Val(); after > ttl {
				t.Errorf("attempts %q: %s renewed the record's TTL (%v, then %v)", bad, name, ttl, after)
			}
			if owner := rdb.Get(ctx, ks.lock).Val(); owner != "owner" {
				t.Errorf("attempts %q: %s: lock held by %q, want it kept", bad, name, owner)
			}
			if n := rdb.LLen(ctx, ks.events).Val(); n != 0 {
				t.Errorf("attempts %q: %s pushed %d events", bad, name, n)
			}
		}
	}
}

// TestIntegerAttemptsAreKept: every integer the scripts can meet in the
// attempts field, 0 and one to eighteen digits, negative too, is kept by a
// terminal transition on every path and counted on by a running one.
func TestIntegerAttemptsAreKept(t *testing.T) {
	rdb, g, svc := gateAndService(t)
	ctx := context.Background()
	for i, n := range []string{"0", "1", "9", "10", "12", "-5", "999999999999999"} {
		id, sk := fmt.Sprintf("ok-%d", i), session.Key{App: "support", UserID: "u", SessionID: fmt.Sprintf("ok%d", i)}
		rkey := g.invs.cfg.invocationKey(id)
		rec := func(st session.InvocationStatus) *session.Invocation {
			return &session.Invocation{ID: id, Session: sk, Status: st, Result: []byte(`{}`)}
		}
		paths := storePaths(ctx, g, svc, sk, rec)
		for name, st := range map[string]session.InvocationStatus{
			"Transition": session.InvocationFailed, "Finish": session.InvocationDeadLettered, "FinishWithEvents": session.InvocationDeadLettered,
		} {
			run := func() error { return paths[name](st) }
			if _, err := g.Enter(ctx, sk, "owner", time.Minute, rec(session.InvocationRunning)); err != nil {
				t.Fatal(err)
			}
			rdb.HSet(ctx, rkey, "attempts", n)
			if err := run(); err != nil {
				t.Errorf("attempts %s: %s: %v", n, name, err)
			}
			if got := rdb.HGet(ctx, rkey, "attempts").Val(); got != n {
				t.Errorf("attempts %s: %s stored %q", n, name, got)
			}
		}
		r := rec(session.InvocationRunning)
		if err := g.invs.Transition(ctx, r); err != nil {
			t.Fatalf("attempts %s: running: %v", n, err)
		}
		if want, _ := strconv.Atoi(n); r.Attempts != want+1 {
			t.Errorf("attempts %s: running again counted %d", n, r.Attempts)
		}
	}
}
