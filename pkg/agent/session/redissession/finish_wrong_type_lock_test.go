package redissession_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// Gate.Finish onto a session lock key of the wrong type must not report an
// error for a record it stored. finishScript stored the record first
// (luaTransition) and then read the lock with redis.call('GET'), which
// raises WRONGTYPE after the write: Redis does not roll back, so the
// completion was stored while the caller was told the finish failed (and,
// with released false, that it still holds a lock). Gate.Finish's contract
// (session.Gate): "err is the store's", i.e. the record's; the scripts of
// this package otherwise check a key's type before their first write
// (TestEnterOntoAWrongTypeRecordTakesNoLock,
// TestFinishWithEventsOntoWrongTypeKeysWritesNothing).
func TestFinishOntoAWrongTypeLockWritesAllOrNothing(t *testing.T) {
	p := newParts(t, 0)
	ctx := context.Background()
	k := session.Key{App: "a", UserID: "u", SessionID: "s"}
	if e, err := p.gate.Enter(ctx, k, "w1", time.Minute, &session.Invocation{ID: "i1", Session: k, Status: session.InvocationRunning}); err != nil || e.Lease == nil {
		t.Fatalf("Enter = %+v, %v", e, err)
	}
	lockKey := p.prefix + "lock:{a:u:s}"
	if err := p.rdb.Del(ctx, lockKey).Err(); err != nil {
		t.Fatal(err)
	}
	if err := p.rdb.HSet(ctx, lockKey, "owner", "w1").Err(); err != nil {
		t.Fatal(err)
	}
	_, err := p.gate.Finish(ctx, &session.Invocation{ID: "i1", Session: k, Status: session.InvocationCompleted, Result: []byte(`{"ok":true}`)}, k, "w1")
	rec, gerr := p.inv.Get(ctx, "i1")
	if gerr != nil {
		t.Fatal(gerr)
	}
	if err != nil && rec.Status != session.InvocationRunning {
		t.Fatalf("Finish returned %v, yet the record was stored as %s: the script wrote and then failed", err, rec.Status)
	}
}
