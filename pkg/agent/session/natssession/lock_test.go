package natssession_test

import (
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/natssession"
	"github.com/agentfleet/agentfleet/pkg/agent/session/sessiontest"
)

func TestLockerConformance(t *testing.T) {
	var last *env
	open := func(t *testing.T, e *env) session.Locker {
		l, err := natssession.NewLocker(ctx, e.js(t), config())
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	sessiontest.RunLocker(t, sessiontest.LockerFactory{
		New: func(t *testing.T) session.Locker {
			last = newEnv(t)
			return open(t, last)
		},
		Reopen: func(t *testing.T) session.Locker {
			last.restart(t)
			return open(t, last)
		},
	})
}

func TestLeaseLongerThanBucketMaxAgeRejected(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	l, err := natssession.NewLocker(ctx, js, natssession.Config{LockMaxAge: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	k := session.Key{App: "support", UserID: "u1", SessionID: "s1"}
	if _, err := l.Acquire(ctx, k, "a", time.Hour); err == nil {
		t.Fatal("Acquire with a lease beyond the bucket's max age succeeded")
	}
}
