package natskv_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
	"github.com/agentfleet/agentfleet/pkg/idempotency/natskv"
)

// hash64 stands for a key's 64-byte hex hash.
var hash64 = strings.Repeat("ab", 32)

// Regression (found in review, nineteenth session): KVKey(req.Key) and
// IndexKey(invocationID) had no length bound, and escaping takes three bytes
// for each byte outside [A-Za-z0-9_-]. A long key or invocation id (an
// operator's `dlq-replayer show <id>`, which passes the id to Effects; a long
// prefix, agent or tool name in a key) made a subject past the server's
// max_control_line (4 KiB): the server answered "maximum control line
// exceeded" and closed the client's connection for good, so every later
// call on it (sessions, locks, the worker's consumer) failed with
// "connection closed", and the error came back as ErrStoreUnavailable,
// which a worker takes for its infrastructure being down (Nak with delay,
// for ever). Correct: a key or id whose KV key would exceed MaxKeyLen is
// refused before anything is sent, with an error wrapping
// idempotency.ErrKeyTooLong that is not an outage, on every call that takes
// one; the connection stays usable.
func TestLongKeyDoesNotCloseTheConnection(t *testing.T) {
	ctx := context.Background()
	js, nc, _ := natstest.JetStream(t)
	s := newStore(t, js, natskv.Config{Bucket: "IDEM", Retention: time.Hour, OpTimeout: 2 * time.Second})

	longID := strings.Repeat("é", 1000)                // 2000 bytes, escaped 6000
	longKey := "idem:support:" + longID + ":" + hash64 // escaped past MaxKeyLen
	okTicket := idempotency.Ticket{Key: "idem:support:refund:" + hash64, InvocationID: "inv-1", Owner: "w1/1"}
	errs := map[string]error{}
	_, errs["Effects"] = s.Effects(ctx, longID)
	_, errs["Claim (long key)"] = s.Claim(ctx, idempotency.ClaimRequest{
		Ticket: idempotency.Ticket{Key: longKey, InvocationID: "inv-1", Owner: "w1/1"}, Lease: time.Minute})
	_, errs["Claim (long invocation id)"] = s.Claim(ctx, idempotency.ClaimRequest{
		Ticket: idempotency.Ticket{Key: okTicket.Key, InvocationID: longID, Owner: "w1/1"}, Lease: time.Minute})
	for what, tk := range map[string]idempotency.Ticket{
		"long key":           {Key: longKey, InvocationID: "inv-1", Owner: "w1/1"},
		"long invocation id": {Key: okTicket.Key, InvocationID: longID, Owner: "w1/1"},
	} {
		_, errs["Renew ("+what+")"] = s.Renew(ctx, tk, time.Minute)
		errs["Complete ("+what+")"] = s.Complete(ctx, tk, json.RawMessage(`{"status":"ok"}`), time.Hour)
		errs["Release ("+what+")"] = s.Release(ctx, tk)
	}
	for name, err := range errs {
		var se *idempotency.StoreError
		switch {
		case !errors.Is(err, idempotency.ErrKeyTooLong):
			t.Errorf("%s = %.300v; want ErrKeyTooLong", name, err)
		case errors.Is(err, idempotency.ErrStoreUnavailable) || errors.As(err, &se):
			t.Errorf("%s = %.300v; a key too long is not an outage (ErrStoreUnavailable, *StoreError)", name, err)
		}
	}
	if t.Failed() {
		t.Logf("connection after the long keys: %v (last error %v)", nc.Status(), nc.LastError())
	}

	// The connection stays usable: the same store claims, completes and
	// lists another call.
	if st := nc.Status(); st != nats.CONNECTED {
		t.Fatalf("connection after the long keys is %v (last error %v), want CONNECTED", st, nc.LastError())
	}
	cl, err := s.Claim(ctx, idempotency.ClaimRequest{Ticket: okTicket, Tool: "refund", Lease: time.Minute})
	if err != nil || cl.Outcome != idempotency.OutcomeAcquired {
		t.Fatalf("claim after the long keys = %v, %.300v; want acquired (connection %v)", cl.Outcome, err, nc.Status())
	}
	if err := s.Complete(ctx, okTicket, json.RawMessage(`{"status":"ok"}`), time.Hour); err != nil {
		t.Fatalf("complete after the long keys: %v", err)
	}
	if recs, err := s.Effects(ctx, "inv-1"); err != nil || len(recs) != 1 || recs[0].State != idempotency.StateCompleted {
		t.Fatalf("effects after the long keys = %+v, %v; want the completed record", recs, err)
	}
}

// A key or index key of exactly MaxKeyLen bytes works (the bound counts
// escaped bytes, the dots included), one byte more is refused; the keys of
// the worker's widest request (agent name and invocation id of 128 bytes,
// the envelope's limit) fit.
func TestKeysUpToMaxKeyLenWork(t *testing.T) {
	ctx := context.Background()
	js, nc, _ := natstest.JetStream(t)
	s := newStore(t, js, natskv.Config{Bucket: "IDEM", Retention: time.Hour, OpTimeout: 2 * time.Second})
	claim := func(key, inv string) error {
		_, err := s.Claim(ctx, idempotency.ClaimRequest{Ticket: idempotency.Ticket{Key: key, InvocationID: inv, Owner: "w1/1"}, Lease: time.Minute})
		return err
	}

	widest := idempotency.Key{Prefix: idempotency.DefaultKeyPrefix, Agent: strings.Repeat("a", 128), Tool: "refund", Hash: hash64}
	if err := claim(widest.String(), strings.Repeat("i", 128)); err != nil {
		t.Fatalf("claim of the widest request's key: %v", err)
	}

	// "idem" "." "=C3=A9"×k "." <tool> "." <hash>: the tool name fills the
	// rest.
	const k = 100
	fixed := len("idem") + 1 + 6*k + 1 + 1 + len(hash64)
	edge := "idem:" + strings.Repeat("é", k) + ":" + strings.Repeat("t", natskv.MaxKeyLen-fixed) + ":" + hash64
	if n := len(natskv.KVKey(edge)); n != natskv.MaxKeyLen {
		t.Fatalf("test bug: KVKey(edge) is %d bytes, want %d", n, natskv.MaxKeyLen)
	}
	if err := claim(edge, "inv-edge"); err != nil {
		t.Fatalf("claim of a key of MaxKeyLen bytes: %v", err)
	}
	if recs, err := s.Effects(ctx, "inv-edge"); err != nil || len(recs) != 1 || recs[0].Key != edge {
		t.Fatalf("effects of a key of MaxKeyLen bytes = %d records, %v", len(recs), err)
	}
	over := strings.Replace(edge, "t", "tt", 1)
	if err := claim(over, "inv-edge"); !errors.Is(err, idempotency.ErrKeyTooLong) {
		t.Fatalf("claim of a key of MaxKeyLen+1 bytes = %v; want ErrKeyTooLong", err)
	}

	edgeID := strings.Repeat("i", natskv.MaxKeyLen-len(natskv.IndexKeyPrefix)-1)
	if n := len(natskv.IndexKey(edgeID)); n != natskv.MaxKeyLen {
		t.Fatalf("test bug: IndexKey(edgeID) is %d bytes, want %d", n, natskv.MaxKeyLen)
	}
	if err := claim("idem:support:refund:"+hash64, edgeID); err != nil {
		t.Fatalf("claim of an invocation id whose index key is MaxKeyLen bytes: %v", err)
	}
	if recs, err := s.Effects(ctx, edgeID); err != nil || len(recs) != 1 {
		t.Fatalf("effects of an invocation id whose index key is MaxKeyLen bytes = %d records, %v", len(recs), err)
	}
	if _, err := s.Effects(ctx, edgeID+"i"); !errors.Is(err, idempotency.ErrKeyTooLong) {
		t.Fatalf("effects of an invocation id one byte longer = %v; want ErrKeyTooLong", err)
	}
	if st := nc.Status(); st != nats.CONNECTED {
		t.Fatalf("connection is %v (last error %v), want CONNECTED", st, nc.LastError())
	}
}
