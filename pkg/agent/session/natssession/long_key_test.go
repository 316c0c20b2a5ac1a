package natssession_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/natssession"
)

// Regression (found in review, nineteenth session): The package promises
// that any id maps to a valid KV key (Key.Validate only refuses empty
// segments, and the Redis and memory backends take ids of any length). But
// a key is base64 of the ids in the request subject, and an id of a few
// kilobytes makes a subject past the server's max_control_line (4 KiB): the
// server answers "maximum control line exceeded" and closes the client's
// connection, which nats.go does not reconnect. One call with a long id (an
// AppendEvent, an Acquire, a record Get) thus left the process's shared
// connection CLOSED, and every other session, lock, record and the worker's
// consumer on it failed from then on. Correct: a key too long for the
// server is refused with an error of the call's own (ErrKeyTooLong, on
// every call that takes a key), and the connection stays usable.
func TestLongSessionIDDoesNotCloseTheConnection(t *testing.T) {
	js, nc, _ := natstest.JetStream(t)
	svc, locker, invs := openStores(t, js)
	long := session.Key{App: "support", UserID: "u1", SessionID: strings.Repeat("s", 4000)}
	aerr := svc.AppendEvent(ctx, long, &session.Event{InvocationID: "i1", Author: "support"})
	t.Logf("append with a 4000-byte session id: %.200v", aerr)

	// Every call that takes a key refuses it with ErrKeyTooLong, without
	// sending it.
	_, gerr := svc.Get(ctx, long)
	_, cerr := svc.GetOrCreate(ctx, long)
	_, lerr := locker.Acquire(ctx, long, "w1", time.Minute)
	_, rerr := locker.Renew(ctx, long, "w1", time.Minute)
	relErr := locker.Release(ctx, long, "w1")
	longID := strings.Repeat("i", 4000)
	_, ierr := invs.Get(ctx, longID)
	terr := invs.Transition(ctx, &session.Invocation{ID: longID, Session: session.Key{App: "support", UserID: "u1", SessionID: "s1"}, Status: session.InvocationRunning})
	for name, err := range map[string]error{"AppendEvent": aerr, "Get": gerr, "GetOrCreate": cerr, "Acquire": lerr,
		"Renew": rerr, "Release": relErr, "Invocations.Get": ierr, "Invocations.Transition": terr} {
		if !errors.Is(err, natssession.ErrKeyTooLong) {
			t.Errorf("%s with a 4000-byte id = %.200v; want ErrKeyTooLong", name, err)
		}
	}

	// Another session, on the same connection.
	ok := session.Key{App: "support", UserID: "u1", SessionID: "s1"}
	if err := svc.AppendEvent(ctx, ok, &session.Event{InvocationID: "i2", Author: "support"}); err != nil {
		t.Errorf("an append to another session after the long id failed: %.300v (connection %v, last error %v)", err, nc.Status(), nc.LastError())
	}
	if _, err := locker.Acquire(ctx, ok, "w1", time.Minute); err != nil {
		t.Errorf("a lock of another session after the long id failed: %.300v (connection %v)", err, nc.Status())
	}
}

// The bound leaves room for every id the request envelope accepts (agent
// 128, user and session id 256 bytes each; a 128-byte invocation id): the
// worker's keys always fit, and a key just within MaxKeyLen works.
func TestKeysWithinEnvelopeLimitsFit(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	svc, locker, invs := openStores(t, js)
	widest := session.Key{App: strings.Repeat("a", 128), UserID: strings.Repeat("ü", 128), SessionID: strings.Repeat("s", 256)}
	if err := svc.AppendEvent(ctx, widest, &session.Event{InvocationID: "i1", Author: "support"}); err != nil {
		t.Fatalf("append to a session with the envelope's longest ids: %v", err)
	}
	if _, err := locker.Acquire(ctx, widest, "w1", time.Minute); err != nil {
		t.Fatalf("lock of a session with the envelope's longest ids: %v", err)
	}
	id := strings.Repeat("i", 128)
	if err := invs.Transition(ctx, &session.Invocation{ID: id, Session: widest, Status: session.InvocationRunning}); err != nil {
		t.Fatalf("record of the longest invocation id: %v", err)
	}
	// The longest session id beside one-byte app and user ids: their
	// encodings and the two dots take 6 bytes, n bytes encode to
	// ceil(4n/3).
	n := (natssession.MaxKeyLen - 6) * 3 / 4
	edge := session.Key{App: "a", UserID: "u", SessionID: strings.Repeat("s", n)}
	if err := svc.AppendEvent(ctx, edge, &session.Event{InvocationID: "i1", Author: "support"}); err != nil {
		t.Fatalf("append with a key of at most MaxKeyLen bytes: %v", err)
	}
	edge.SessionID += "sss"
	if err := svc.AppendEvent(ctx, edge, &session.Event{InvocationID: "i1", Author: "support"}); !errors.Is(err, natssession.ErrKeyTooLong) {
		t.Fatalf("append with a key just past MaxKeyLen = %v; want ErrKeyTooLong", err)
	}
}

// openStores opens the session, lock and invocation stores on js with the
// default configuration.
func openStores(t *testing.T, js jetstream.JetStream) (*natssession.Service, *natssession.Locker, *natssession.Invocations) {
	t.Helper()
	svc, err := natssession.NewService(ctx, js, natssession.Config{})
	if err != nil {
		t.Fatal(err)
	}
	locker, err := natssession.NewLocker(ctx, js, natssession.Config{})
	if err != nil {
		t.Fatal(err)
	}
	invs, err := natssession.NewInvocations(ctx, js, natssession.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return svc, locker, invs
}
