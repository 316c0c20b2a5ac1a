package natssession_test

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/natssession"
)

// TestInvocationRetentionIsNeverLowered: a process with a shorter
// invocation retention leaves a longer bucket as it is (a dropped completed
// record would let a late duplicate run again); a longer one raises it.
func TestInvocationRetentionIsNeverLowered(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	for _, r := range []time.Duration{31 * 24 * time.Hour, 15 * 24 * time.Hour} {
		if _, err := natssession.NewInvocations(ctx, js, natssession.Config{InvocationRetention: r}); err != nil {
			t.Fatal(err)
		}
	}
	if got := natstest.BucketMaxAge(t, js, natssession.DefaultInvocationBucket); got != 31*24*time.Hour {
		t.Fatalf("invocation bucket max age %v, want 744h kept", got)
	}
	if _, err := natssession.NewInvocations(ctx, js, natssession.Config{InvocationRetention: 40 * 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	if got := natstest.BucketMaxAge(t, js, natssession.DefaultInvocationBucket); got != 40*24*time.Hour {
		t.Fatalf("invocation bucket max age %v, want 960h", got)
	}
}

// TestOpenExistingChangesNothing: with OpenExisting the three stores open
// the buckets as the owner made them, fail on a missing one without creating
// it, and a Locker caps leases by the lock bucket's own max age.
func TestOpenExistingChangesNothing(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	existing := natssession.Config{OpenExisting: true, InvocationRetention: time.Hour, LockMaxAge: time.Hour}
	if _, err := natssession.NewLocker(ctx, js, existing); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("missing lock bucket: err = %v, want ErrBucketNotFound", err)
	}
	if _, err := natssession.NewInvocations(ctx, js, existing); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("missing invocation bucket: err = %v, want ErrBucketNotFound", err)
	}
	if _, err := natssession.NewService(ctx, js, existing); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("missing session bucket: err = %v, want ErrBucketNotFound", err)
	}
	for _, b := range []string{natssession.DefaultLockBucket, natssession.DefaultInvocationBucket, natssession.DefaultSessionBucket} {
		if _, err := js.KeyValue(ctx, b); !errors.Is(err, jetstream.ErrBucketNotFound) {
			t.Fatalf("OpenExisting created %s: %v", b, err)
		}
	}

	owner := natssession.Config{InvocationRetention: 48 * time.Hour, LockMaxAge: time.Minute, SessionTTL: 72 * time.Hour}
	if _, err := natssession.NewLocker(ctx, js, owner); err != nil {
		t.Fatal(err)
	}
	if _, err := natssession.NewInvocations(ctx, js, owner); err != nil {
		t.Fatal(err)
	}
	if _, err := natssession.NewService(ctx, js, owner); err != nil {
		t.Fatal(err)
	}
	l, err := natssession.NewLocker(ctx, js, existing)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := natssession.NewInvocations(ctx, js, existing); err != nil {
		t.Fatal(err)
	}
	if _, err := natssession.NewService(ctx, js, existing); err != nil {
		t.Fatal(err)
	}
	for b, want := range map[string]time.Duration{
		natssession.DefaultLockBucket:       time.Minute,
		natssession.DefaultInvocationBucket: 48 * time.Hour,
		natssession.DefaultSessionBucket:    72 * time.Hour,
	} {
		if got := natstest.BucketMaxAge(t, js, b); got != want {
			t.Errorf("%s max age %v, want the owner's %v", b, got, want)
		}
	}
	k := session.Key{App: "support", UserID: "u1", SessionID: "s1"}
	if _, err := l.Acquire(ctx, k, "a", 30*time.Minute); err == nil {
		t.Fatal("a lease beyond the lock bucket's 1m max age was taken (the replayer's 1h configuration was used)")
	}
	if _, err := l.Acquire(ctx, k, "a", 30*time.Second); err != nil {
		t.Fatal(err)
	}
}

// A lock bucket without a max age, opened as it is, caps no lease (the
// configured LockMaxAge is for a bucket this process would create).
func TestOpenExistingLockBucketWithoutMaxAge(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: natssession.DefaultLockBucket}); err != nil {
		t.Fatal(err)
	}
	l, err := natssession.NewLocker(ctx, js, natssession.Config{OpenExisting: true, LockMaxAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx, session.Key{App: "support", UserID: "u1", SessionID: "s1"}, "a", 48*time.Hour); err != nil {
		t.Fatalf("a 48h lease on a bucket without a max age: %v", err)
	}
}
