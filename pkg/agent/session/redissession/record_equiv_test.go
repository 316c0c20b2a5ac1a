package redissession

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// TestGateWritesWhatTransitionWrites checks that the enter and final-write
// scripts, which skip reads and counts the generic transition makes, leave
// each record field for field as the transition script does: a new running
// record (Enter), a terminal record over a running one and over none
// (FinishWithEvents).
func TestGateWritesWhatTransitionWrites(t *testing.T) {
	rdb, prefix := redistest.Client(t)
	ctx := context.Background()
	cfg := Config{Prefix: prefix}
	g, err := NewGate(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := New(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2026, 12, 1, 8, 0, 0, 123, time.UTC)
	g.invs.now = func() time.Time { return clock }
	inv := g.invs // the generic path: transitionScript

	hash := func(id string) map[string]string {
		t.Helper()
		m, err := rdb.HGetAll(ctx, g.invs.cfg.invocationKey(id)).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl := rdb.PTTL(ctx, g.invs.cfg.invocationKey(id)).Val(); ttl <= 0 {
			t.Errorf("record %s has no TTL (%v)", id, ttl)
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
	if err := inv.Transition(ctx, running("a", "sa")); err != nil {
		t.Fatal(err)
	}
	e, err := g.Enter(ctx, key("sb"), "owner-b", time.Minute, running("b", "sb"))
	if err != nil || e.Lease == nil || e.Existing != nil {
		t.Fatalf("enter: %+v %v", e, err)
	}
	same("new running record", "a", "b")

	// A second run (attempts 2), then the completion over it.
	clock = clock.Add(time.Second)
	if err := inv.Transition(ctx, done("a", "sa")); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Finish(ctx, done("b", "sb"), key("sb"), "owner-b"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"c", "d"} {
		if err := inv.Transition(ctx, running(id, "s"+id)); err != nil {
			t.Fatal(err)
		}
	}
	clock = clock.Add(time.Second)
	for _, id := range []string{"c", "d"} {
		if err := inv.Transition(ctx, failed(id, "s"+id)); err != nil {
			t.Fatal(err)
		}
	}
	clock = clock.Add(time.Second)
	if err := inv.Transition(ctx, running("c", "sc")); err != nil { // attempts 2
		t.Fatal(err)
	}
	if _, err := g.Enter(ctx, key("sd"), "owner-d", time.Minute, running("d", "sd")); err != nil {
		t.Fatal(err)
	}
	if err := inv.Transition(ctx, running("d", "sd")); err != nil { // the worker's transition of an existing record
		t.Fatal(err)
	}
	same("second run", "c", "d")
	clock = clock.Add(time.Second)
	if err := inv.Transition(ctx, done("c", "sc")); err != nil {
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
	if err := inv.Transition(ctx, failed("e", "se")); err != nil {
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
