package natssession_test

import (
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/natssession"
	"github.com/agentfleet/agentfleet/pkg/agent/session/sessiontest"
)

// TestGateConformance runs the Gate suite over the NATS KV locker,
// invocation store and sessions, composed by session.NewGate as the NATS-only
// worker composes them (internal/app).
func TestGateConformance(t *testing.T) {
	sessiontest.RunGate(t, func(t *testing.T) sessiontest.GateParts {
		js := newEnv(t).js(t)
		l, err := natssession.NewLocker(ctx, js, config())
		if err != nil {
			t.Fatal(err)
		}
		invs, err := natssession.NewInvocations(ctx, js, config())
		if err != nil {
			t.Fatal(err)
		}
		svc, err := natssession.NewService(ctx, js, config())
		if err != nil {
			t.Fatal(err)
		}
		return sessiontest.GateParts{Gate: session.NewGate(l, invs), Locker: l, Invocations: invs, Sessions: svc}
	})
}
