package redissession_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/redissession"
	"github.com/agentfleet/agentfleet/pkg/agent/session/sessiontest"
)

func TestGateConformance(t *testing.T) {
	for _, kind := range redistest.Kinds() {
		t.Run(kind.Name, func(t *testing.T) {
			sessiontest.RunGate(t, func(t *testing.T) sessiontest.GateParts {
				p := newPartsOn(t, kind, 0)
				return sessiontest.GateParts{Gate: p.gate, Locker: p.locker, Invocations: p.inv, Sessions: p.svc}
			})
		})
	}
}

// parts are a Gate, Service, Invocations and Locker on one client and a
// key prefix of their own.
type parts struct {
	rdb    redis.UniversalClient
	prefix string
	gate   *redissession.Gate
	svc    *redissession.Service
	inv    *redissession.Invocations
	locker *redissession.Locker
}

func newParts(t *testing.T, sessionTTL time.Duration) parts {
	t.Helper()
	return newPartsOn(t, redistest.Kinds()[0], sessionTTL)
}

// newPartsOn is newParts on a client of kind.
func newPartsOn(t *testing.T, kind redistest.Kind, sessionTTL time.Duration) parts {
	t.Helper()
	rdb, prefix := kind.New(t)
	cfg := redissession.Config{Prefix: prefix, SessionTTL: sessionTTL}
	p := parts{rdb: rdb, prefix: prefix}
	var err error
	if p.gate, err = redissession.NewGate(rdb, cfg); err != nil {
		t.Fatal(err)
	}
	if p.svc, err = redissession.New(rdb, cfg); err != nil {
		t.Fatal(err)
	}
	if p.inv, err = redissession.NewInvocations(rdb, cfg); err != nil {
		t.Fatal(err)
	}
	if p.locker, err = redissession.NewLocker(rdb, cfg); err != nil {
		t.Fatal(err)
	}
	return p
}

// EnterWithSession reads the session only from the Service it was built
// alongside; otherwise, or when an event cannot be decoded, Entry.Session
// is nil and the lock and record are as Enter's, so the runner's own load
// decides (and reports a corrupt event as it always has).
func TestEnterWithSessionFallsBack(t *testing.T) {
	rdb, prefix := redistest.Client(t)
	cfg := redissession.Config{Prefix: prefix}
	g, err := redissession.NewGate(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	running := func(id string) *session.Invocation {
		return &session.Invocation{ID: id, Session: session.Key{App: "a", UserID: "u", SessionID: id}, Status: session.InvocationRunning}
	}
	enter := func(id string, svc session.Service) *session.Entry {
		t.Helper()
		r := running(id)
		e, err := g.EnterWithSession(ctx, r.Session, "w1", time.Minute, r, svc)
		if err != nil || e.Lease == nil {
			t.Fatalf("EnterWithSession(%s) = %+v, %v; want the lock", id, e, err)
		}
		return e
	}

	other, err := redissession.New(rdb, redissession.Config{Prefix: prefix + "other:"})
	if err != nil {
		t.Fatal(err)
	}
	if e := enter("s-other", other); e.Session != nil {
		t.Fatalf("read a session through a Service on another prefix: %+v", e.Session)
	}

	svc, err := redissession.New(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	k := running("s-corrupt").Session
	if err := svc.AppendEvent(ctx, k, &session.Event{InvocationID: "i0", Author: "u"}); err != nil {
		t.Fatal(err)
	}
	rdb.RPush(ctx, prefix+"sess:{a:u:s-corrupt}:events", "not json")
	if e := enter("s-corrupt", svc); e.Session != nil {
		t.Fatalf("a session with a corrupt event was returned: %+v", e.Session)
	}
	if _, err := svc.GetOrCreate(ctx, k); err == nil {
		t.Fatal("GetOrCreate decoded the corrupt event: the test's key layout is wrong")
	}

	// Redis lost its scripts (a restart): EnterWithSession still enters.
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if e := enter("s-flushed", svc); e.Session != nil && len(e.Session.Events) != 0 {
		t.Fatalf("session after a script flush = %+v", e.Session)
	}
}

func TestGateRefusesCluster(t *testing.T) {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	defer c.Close()
	if _, err := redissession.NewGate(c, redissession.Config{}); !errors.Is(err, redissession.ErrClusterGate) {
		t.Fatalf("NewGate(cluster) = %v, want ErrClusterGate", err)
	}
}

// FinishWithEvents is one round trip with the Service the gate was built
// alongside; with a Service on another prefix it appends, then finishes;
// after Redis lost its scripts it still stores the events once and
// finishes. Each way the events are stored once, in order, and the record
// completed.
func TestFinishWithEventsRoundTripsAndFallbacks(t *testing.T) {
	p := newParts(t, 0)
	rdb, g, svc, inv := p.rdb, p.gate, p.svc, p.inv
	rt := &roundTrips{}
	rdb.AddHook(rt)
	other, err := redissession.New(rdb, redissession.Config{Prefix: p.prefix + "other:"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	finish := func(id string, sessions *redissession.Service) int64 {
		t.Helper()
		k := session.Key{App: "a", UserID: "u", SessionID: id}
		r := &session.Invocation{ID: id, Session: k, Status: session.InvocationRunning}
		if e, err := g.Enter(ctx, k, "w1", time.Minute, r); err != nil || e.Lease == nil {
			t.Fatalf("Enter(%s) = %+v, %v", id, e, err)
		}
		// "gone" is stored first, so only a delete in Redis removes it.
		if err := sessions.AppendEvent(ctx, k, &session.Event{InvocationID: "earlier", Author: "u", Actions: session.Actions{StateDelta: map[string]any{"gone": "x"}}}); err != nil {
			t.Fatal(err)
		}
		evs := []*session.Event{
			{InvocationID: id, Author: "support", Actions: session.Actions{StateDelta: map[string]any{"a": 1.0}}},
			{InvocationID: id, Author: "support", Actions: session.Actions{StateDelta: map[string]any{"gone": nil}}},
		}
		before := rt.total()
		released, err := g.FinishWithEvents(ctx, &session.Invocation{ID: id, Session: k, Status: session.InvocationCompleted, Result: []byte(`{}`)}, k, "w1", sessions, evs)
		trips := rt.total() - before
		if err != nil || !released {
			t.Fatalf("FinishWithEvents(%s) = %v, %v", id, released, err)
		}
		s, err := sessions.Get(ctx, k)
		if err != nil || len(s.Events) != 3 || s.Events[1].ID != evs[0].ID || s.Events[2].ID != evs[1].ID {
			t.Fatalf("session %s = %+v, %v; want the two events once, in order, after the earlier one", id, s, err)
		}
		if _, gone := s.State["gone"]; fmt.Sprint(s.State["a"]) != "1" || gone {
			t.Fatalf("session %s state = %v; want a=1 and gone deleted", id, s.State)
		}
		if rec, err := inv.Get(ctx, id); err != nil || rec.Status != session.InvocationCompleted {
			t.Fatalf("record %s = %+v, %v; want completed", id, rec, err)
		}
		return trips
	}
	finish("s-warm", svc) // loads the script
	if n := finish("s-same", svc); n != 1 {
		t.Fatalf("FinishWithEvents on the gate's Service took %d round trips, want 1", n)
	}
	finish("s-other-warm", other)
	if n := finish("s-other", other); n != 2 {
		t.Fatalf("FinishWithEvents on another prefix took %d round trips, want 2 (append, then finish)", n)
	}
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	finish("s-flushed", svc)
}

// FinishWithEvents writes only under the caller's lock, stores no events
// for an invocation completed already, and leaves the record running and
// the lock held when the append fails inside Redis (review findings: the
// first version appended in a MULTI whatever the lock and the record said).
func TestFinishWithEventsIsFenced(t *testing.T) {
	p := newParts(t, 0)
	rdb, prefix, g, svc, inv, locker := p.rdb, p.prefix, p.gate, p.svc, p.inv, p.locker
	ctx := context.Background()
	enter := func(id string) session.Key {
		t.Helper()
		k := session.Key{App: "a", UserID: "u", SessionID: id}
		if e, err := g.Enter(ctx, k, "w1", time.Minute, &session.Invocation{ID: id, Session: k, Status: session.InvocationRunning}); err != nil || e.Lease == nil {
			t.Fatalf("Enter(%s) = %+v, %v", id, e, err)
		}
		return k
	}
	done := func(id string, k session.Key) *session.Invocation {
		return &session.Invocation{ID: id, Session: k, Status: session.InvocationCompleted, Result: []byte(`"mine"`)}
	}
	events := func(k session.Key) int {
		t.Helper()
		s, err := svc.Get(ctx, k)
		if errors.Is(err, session.ErrNotFound) {
			return 0
		}
		if err != nil {
			t.Fatal(err)
		}
		return len(s.Events)
	}
	status := func(id string) session.InvocationStatus {
		t.Helper()
		rec, err := inv.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return rec.Status
	}
	ev := func(id string) []*session.Event { return []*session.Event{{InvocationID: id, Author: "support"}} }

	// Taken over: another owner holds the lock.
	k := enter("taken")
	if err := locker.Release(ctx, k, "w1"); err != nil {
		t.Fatal(err)
	}
	if _, err := locker.Acquire(ctx, k, "w2", time.Minute); err != nil {
		t.Fatal(err)
	}
	released, err := g.FinishWithEvents(ctx, done("taken", k), k, "w1", svc, ev("taken"))
	if !errors.Is(err, session.ErrNotOwner) || !released {
		t.Fatalf("FinishWithEvents under another's lock = %v, %v; want ErrNotOwner, released", released, err)
	}
	if n, st := events(k), status("taken"); n != 0 || st != session.InvocationRunning {
		t.Fatalf("under another's lock: %d events stored, record %s; want none, running", n, st)
	}
	if _, err := locker.Acquire(ctx, k, "w3", time.Minute); !errors.Is(err, session.ErrLocked) {
		t.Fatalf("the other owner's lock was released: %v", err)
	}

	// The lease ran out and nobody holds the lock: nothing is written either.
	k = enter("expired")
	if err := locker.Release(ctx, k, "w1"); err != nil {
		t.Fatal(err)
	}
	if released, err := g.FinishWithEvents(ctx, done("expired", k), k, "w1", svc, ev("expired")); !errors.Is(err, session.ErrNotOwner) || !released {
		t.Fatalf("FinishWithEvents without the lock = %v, %v; want ErrNotOwner, released", released, err)
	}
	// With no events it is fenced all the same.
	if _, err := g.FinishWithEvents(ctx, done("expired", k), k, "w1", svc, nil); !errors.Is(err, session.ErrNotOwner) {
		t.Fatalf("FinishWithEvents without the lock and events = %v; want ErrNotOwner", err)
	}
	if n, st := events(k), status("expired"); n != 0 || st != session.InvocationRunning {
		t.Fatalf("without the lock: %d events stored, record %s; want none, running", n, st)
	}

	// Completed by someone else meanwhile: no second answer is stored.
	k = enter("completed")
	if err := inv.Transition(ctx, &session.Invocation{ID: "completed", Session: k, Status: session.InvocationCompleted, Result: []byte(`"theirs"`)}); err != nil {
		t.Fatal(err)
	}
	released, err = g.FinishWithEvents(ctx, done("completed", k), k, "w1", svc, ev("completed"))
	var ce *session.InvocationCompletedError
	if !errors.As(err, &ce) || string(ce.Current.Result) != `"theirs"` || !released {
		t.Fatalf("FinishWithEvents over a completed record = %v, %v", released, err)
	}
	if n := events(k); n != 0 {
		t.Fatalf("%d events stored for a completed invocation, want none", n)
	}

	// The append fails inside Redis (the events key holds a string).
	k = enter("wrongtype")
	if err := rdb.Set(ctx, prefix+"sess:{a:u:wrongtype}:events", "x", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if released, err := g.FinishWithEvents(ctx, done("wrongtype", k), k, "w1", svc, ev("wrongtype")); err == nil || released {
		t.Fatalf("FinishWithEvents onto a string key = %v, %v; want an error, not released", released, err)
	}
	if st := status("wrongtype"); st != session.InvocationRunning {
		t.Fatalf("record %s after a failed append, want running", st)
	}
	if _, err := locker.Acquire(ctx, k, "w2", time.Minute); !errors.Is(err, session.ErrLocked) {
		t.Fatalf("the lock was released after a failed append: %v", err)
	}
}

// The script sent twice (a client resending it after a lost reply) answers
// the second time as Finish would, completed, and writes nothing more; a
// session TTL is applied to the session's keys; more values than Lua's
// unpack takes at once are written in chunks (review findings).
func TestFinishWithEventsResentTTLAndLarge(t *testing.T) {
	p := newParts(t, time.Hour)
	rdb, prefix, g, svc := p.rdb, p.prefix, p.gate, p.svc
	ctx := context.Background()
	k := session.Key{App: "a", UserID: "u", SessionID: "big"}
	if e, err := g.Enter(ctx, k, "w1", time.Minute, &session.Invocation{ID: "big", Session: k, Status: session.InvocationRunning}); err != nil || e.Lease == nil {
		t.Fatalf("Enter = %+v, %v", e, err)
	}
	const n, m = 8001, 4001
	delta := make(map[string]any, m)
	for i := range m {
		delta[fmt.Sprintf("k%d", i)] = float64(i)
	}
	evs := make([]*session.Event, n)
	for i := range evs {
		evs[i] = &session.Event{InvocationID: "big", Author: "support"}
	}
	evs[0].Actions.StateDelta = delta
	rec := func() *session.Invocation {
		return &session.Invocation{ID: "big", Session: k, Status: session.InvocationCompleted, Result: []byte(`{}`)}
	}
	if released, err := g.FinishWithEvents(ctx, rec(), k, "w1", svc, evs); err != nil || !released {
		t.Fatalf("FinishWithEvents(%d events, %d state keys) = %v, %v", n, m, released, err)
	}
	s, err := svc.Get(ctx, k)
	if err != nil || len(s.Events) != n || s.Events[n-1].ID != evs[n-1].ID || len(s.State) != m || fmt.Sprint(s.State["k4000"]) != "4000" {
		t.Fatalf("session: %d events, %d state keys, %v; want %d and %d", len(s.Events), len(s.State), err, n, m)
	}
	for _, suffix := range []string{"events", "state", "meta"} {
		if ttl := rdb.PTTL(ctx, prefix+"sess:{a:u:big}:"+suffix).Val(); ttl <= 0 || ttl > time.Hour {
			t.Fatalf("%s TTL = %v, want the session TTL", suffix, ttl)
		}
	}
	released, err := g.FinishWithEvents(ctx, rec(), k, "w1", svc, evs[:1])
	var ce *session.InvocationCompletedError
	if !errors.As(err, &ce) || !released {
		t.Fatalf("the script resent = %v, %v; want *InvocationCompletedError, released", released, err)
	}
	if s, err := svc.Get(ctx, k); err != nil || len(s.Events) != n {
		t.Fatalf("the resent script stored events: %d, %v", len(s.Events), err)
	}
}

// An Enter whose invocation record is a key of another type fails before
// it writes anything: the lock stays free (review finding: the script took
// the lock and then failed on the record, and its caller, told no lease
// was held, left the session locked for the lease unless a best-effort
// release came through).
func TestEnterOntoAWrongTypeRecordTakesNoLock(t *testing.T) {
	p := newParts(t, 0)
	ctx := context.Background()
	k := session.Key{App: "a", UserID: "u", SessionID: "s"}
	if err := p.rdb.Set(ctx, p.prefix+"inv:{i1}", "x", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	e, err := p.gate.Enter(ctx, k, "w1", time.Minute, &session.Invocation{ID: "i1", Session: k, Status: session.InvocationRunning})
	if err == nil || e.Lease != nil {
		t.Fatalf("Enter onto a string record = %+v, %v; want an error and no lease", e, err)
	}
	if _, err := p.locker.Acquire(ctx, k, "w2", time.Minute); err != nil {
		t.Fatalf("the failed Enter left the lock held: %v", err)
	}
}

// FinishWithEvents onto a session whose state or meta key is of another
// type writes nothing, as session.EventGate promises: no events pushed,
// the record running, the lock held (review finding: the events were pushed
// before the state or meta write failed, so the redelivery found the final
// events stored with the invocation still running).
func TestFinishWithEventsOntoWrongTypeKeysWritesNothing(t *testing.T) {
	p := newParts(t, time.Hour)
	ctx := context.Background()
	for _, suffix := range []string{"events", "state", "meta"} {
		id := "wrong-" + suffix
		k := session.Key{App: "a", UserID: "u", SessionID: id}
		if e, err := p.gate.Enter(ctx, k, "w1", time.Minute, &session.Invocation{ID: id, Session: k, Status: session.InvocationRunning}); err != nil || e.Lease == nil {
			t.Fatalf("Enter(%s) = %+v, %v", id, e, err)
		}
		base := p.prefix + "sess:{a:u:" + id + "}:"
		if err := p.rdb.Set(ctx, base+suffix, "x", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		evs := []*session.Event{{InvocationID: id, Author: "support", Actions: session.Actions{StateDelta: map[string]any{"a": 1.0}}}}
		done := &session.Invocation{ID: id, Session: k, Status: session.InvocationCompleted, Result: []byte(`{}`)}
		if released, err := p.gate.FinishWithEvents(ctx, done, k, "w1", p.svc, evs); err == nil || released {
			t.Fatalf("%s of the wrong type: FinishWithEvents = %v, %v; want an error, not released", suffix, released, err)
		}
		if n := p.rdb.LLen(ctx, base+"events").Val(); suffix != "events" && n != 0 {
			t.Errorf("%s of the wrong type: %d events pushed, want none", suffix, n)
		}
		for _, other := range []string{"state", "meta"} {
			if other != suffix && p.rdb.Exists(ctx, base+other).Val() != 0 {
				t.Errorf("%s of the wrong type: %s written", suffix, other)
			}
		}
		if rec, err := p.inv.Get(ctx, id); err != nil || rec.Status != session.InvocationRunning {
			t.Errorf("%s of the wrong type: record %+v, %v; want running", suffix, rec, err)
		}
		if owner := p.rdb.Get(ctx, p.prefix+"lock:{a:u:"+id+"}").Val(); owner != "w1" {
			t.Errorf("%s of the wrong type: lock held by %q, want w1", suffix, owner)
		}
	}
}

// An append onto a session key of the wrong type writes nothing and fails
// (before, its MULTI pushed the events and then failed on the state or
// meta key: the caller saw an error for events that were stored).
func TestAppendOntoWrongTypeKeysWritesNothing(t *testing.T) {
	for _, kind := range redistest.Kinds() {
		t.Run(kind.Name, func(t *testing.T) {
			p := newPartsOn(t, kind, time.Hour)
			ctx := context.Background()
			for _, suffix := range []string{"events", "state", "meta"} {
				id := "wrong-" + suffix
				k := session.Key{App: "a", UserID: "u", SessionID: id}
				base := p.prefix + "sess:{a:u:" + id + "}:"
				if err := p.rdb.Set(ctx, base+suffix, "x", time.Minute).Err(); err != nil {
					t.Fatal(err)
				}
				evs := []*session.Event{{InvocationID: id, Author: "support", Actions: session.Actions{StateDelta: map[string]any{"a": 1.0}}}}
				if err := p.svc.AppendEvents(ctx, k, evs); err == nil {
					t.Fatalf("%s of the wrong type: AppendEvents = nil, want an error", suffix)
				}
				if n := p.rdb.LLen(ctx, base+"events").Val(); suffix != "events" && n != 0 {
					t.Errorf("%s of the wrong type: %d events pushed, want none", suffix, n)
				}
				for _, other := range []string{"state", "meta"} {
					if other != suffix && p.rdb.Exists(ctx, base+other).Val() != 0 {
						t.Errorf("%s of the wrong type: %s written", suffix, other)
					}
				}
			}
		})
	}
}

// roundTrips counts the single commands and the pipelines a client sends.
type roundTrips struct{ cmds, pipelines atomic.Int64 }

// total is the round trips so far: commands and pipelines.
func (r *roundTrips) total() int64 { return r.cmds.Load() + r.pipelines.Load() }

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { r.cmds.Add(1); return next(ctx, cmd) }
}
func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { r.pipelines.Add(1); return next(ctx, cmds) }
}

// EnterWithSession is one command, not a MULTI/EXEC pipeline: an
// auto-pipelining client batches a command with other invocations' but
// sends a pipeline on a connection of its own. The session it reads, with
// the gate's Service, is the stored one, and a session TTL is applied to
// the session's keys as GetOrCreate applies it.
func TestEnterWithSessionIsOneCommand(t *testing.T) {
	p := newParts(t, time.Hour)
	ctx := context.Background()
	ck := &roundTrips{}
	p.rdb.AddHook(ck)
	enter := func(id string) *session.Entry {
		t.Helper()
		k := session.Key{App: "a", UserID: "u", SessionID: id}
		if err := p.svc.AppendEvent(ctx, k, &session.Event{InvocationID: "earlier", Author: "u", Actions: session.Actions{StateDelta: map[string]any{"tier": "gold"}}}); err != nil {
			t.Fatal(err)
		}
		// Only EnterWithSession's read gives the keys their TTL again.
		for _, part := range []string{"events", "state", "meta"} {
			p.rdb.Persist(ctx, fmt.Sprintf("%ssess:{a:u:%s}:%s", p.prefix, id, part))
		}
		cmds, pipes := ck.cmds.Load(), ck.pipelines.Load()
		e, err := p.gate.EnterWithSession(ctx, k, "w1", time.Minute, &session.Invocation{ID: id, Session: k, Status: session.InvocationRunning}, p.svc)
		if err != nil || e.Lease == nil {
			t.Fatalf("EnterWithSession(%s) = %+v, %v; want the lock", id, e, err)
		}
		if n, m := ck.cmds.Load()-cmds, ck.pipelines.Load()-pipes; id != "s-warm" && (n != 1 || m != 0) {
			t.Fatalf("EnterWithSession sent %d command(s) and %d pipeline(s); want 1 command, no pipeline", n, m)
		}
		for _, part := range []string{"events", "state", "meta"} {
			key := fmt.Sprintf("%ssess:{a:u:%s}:%s", p.prefix, id, part)
			if ttl := p.rdb.PTTL(ctx, key).Val(); ttl <= 59*time.Minute || ttl > time.Hour {
				t.Fatalf("%s: TTL %v after EnterWithSession; want the session TTL (1h)", key, ttl)
			}
		}
		return e
	}
	enter("s-warm") // loads the script
	e := enter("s-1")
	if e.Session == nil || len(e.Session.Events) != 1 || e.Session.Events[0].InvocationID != "earlier" || e.Session.State["tier"] != "gold" {
		t.Fatalf("Entry.Session = %+v; want the stored event and state", e.Session)
	}
}

// A session key of the wrong type does not fail EnterWithSession, nor
// cost the lock it took: the session is left to the runner's own load,
// which reports the problem. (The MULTI this step once was returned the
// session over a meta key of the wrong type, and the problem surfaced only
// at the first append.)
func TestEnterWithSessionOnAWrongTypeSessionKey(t *testing.T) {
	for _, part := range []string{"events", "state", "meta"} {
		t.Run(part, func(t *testing.T) {
			p := newParts(t, 0)
			ctx := context.Background()
			k := session.Key{App: "a", UserID: "u", SessionID: "s-" + part}
			if err := p.rdb.Set(ctx, fmt.Sprintf("%ssess:{a:u:s-%s}:%s", p.prefix, part, part), "a string", 0).Err(); err != nil {
				t.Fatal(err)
			}
			e, err := p.gate.EnterWithSession(ctx, k, "w1", time.Minute, &session.Invocation{ID: "i-" + part, Session: k, Status: session.InvocationRunning}, p.svc)
			if err != nil || e.Lease == nil || e.Session != nil {
				t.Fatalf("EnterWithSession = %+v, %v; want the lock, no session, no error", e, err)
			}
			if _, err := p.locker.Acquire(ctx, k, "w2", time.Minute); !errors.Is(err, session.ErrLocked) {
				t.Fatalf("Acquire by another owner = %v; want ErrLocked", err)
			}
			if rec, err := p.inv.Get(ctx, "i-"+part); err != nil || rec.Status != session.InvocationRunning {
				t.Fatalf("record = %+v, %v; want running", rec, err)
			}
			if _, err := p.svc.GetOrCreate(ctx, k); err == nil {
				t.Fatal("GetOrCreate read the session: the runner would not see the problem")
			}
		})
	}
}
