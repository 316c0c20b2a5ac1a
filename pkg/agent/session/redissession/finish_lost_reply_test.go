package redissession_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/redissession"
)

// A FinishWithEvents whose reply is lost and which the client sends again
// answers as its first run did, for a failed or dead-lettered record as for
// a completed one, and as Finish does: its first run wrote the events and
// the record and released the lock. (The resent script answered "lock held
// by nobody, nothing written", ErrNotOwner, for those two statuses.)
func TestFinishWithEventsWithALostReplyAnswersAsItsFirstRun(t *testing.T) {
	for _, st := range []session.InvocationStatus{session.InvocationDeadLettered, session.InvocationFailed} {
		t.Run(string(st), func(t *testing.T) {
			const marker = "finish-lost-reply-marker"
			p, proxied, rdb, cfg := proxiedClient(t, marker)
			g, err := redissession.NewGate(proxied, cfg)
			if err != nil {
				t.Fatal(err)
			}
			svc, err := redissession.New(proxied, cfg)
			if err != nil {
				t.Fatal(err)
			}
			direct, err := redissession.New(rdb, cfg)
			if err != nil {
				t.Fatal(err)
			}
			invs, err := redissession.NewInvocations(rdb, cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			run := func(id string, text string) (bool, error) {
				t.Helper()
				k := session.Key{App: "a", UserID: "u", SessionID: id}
				if e, err := g.Enter(ctx, k, "w1", time.Minute, &session.Invocation{ID: id, Session: k, Status: session.InvocationRunning}); err != nil || e.Lease == nil {
					t.Fatalf("Enter(%s) = %+v, %v", id, e, err)
				}
				evs := []*session.Event{{InvocationID: id, Author: "support", Content: model.NewTextContent(model.RoleModel, text)}}
				return g.FinishWithEvents(ctx, &session.Invocation{ID: id, Session: k, Status: st, Error: "boom"}, k, "w1", svc, evs)
			}
			// Load the script first, so the request whose reply is lost is one
			// that ran (not an EVALSHA answered NOSCRIPT).
			if released, err := run("warm", "warm"); err != nil || !released {
				t.Fatalf("warm FinishWithEvents = %v, %v", released, err)
			}
			released, err := run("s", marker)
			if !p.Dropped() {
				t.Fatal("the proxy never saw the FinishWithEvents")
			}
			k := session.Key{App: "a", UserID: "u", SessionID: "s"}
			sess, gerr := direct.Get(ctx, k)
			if gerr != nil {
				t.Fatal(gerr)
			}
			rec, rerr := invs.Get(ctx, "s")
			if rerr != nil {
				t.Fatal(rerr)
			}
			t.Logf("stored: %d event(s), record %s; FinishWithEvents = released %v, err %v", len(sess.Events), rec.Status, released, err)
			if errors.Is(err, session.ErrNotOwner) {
				t.Fatalf("FinishWithEvents after a lost reply answered %v (\"nothing written\"), but its first run stored the event and the %s record and released the lock", err, st)
			}
			if err != nil || !released || len(sess.Events) != 1 || rec.Status != st || rec.Attempts != 1 {
				t.Fatalf("FinishWithEvents after a lost reply = released %v, %v; stored %d event(s), record %s with %d attempt(s); want success, 1 event, %s, 1 attempt",
					released, err, len(sess.Events), rec.Status, rec.Attempts, st)
			}
		})
	}
}
