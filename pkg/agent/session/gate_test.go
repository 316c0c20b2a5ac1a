package session_test

import (
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/sessiontest"
)

func TestSequentialGateConformance(t *testing.T) {
	sessiontest.RunGate(t, func(t *testing.T) sessiontest.GateParts {
		l, s := session.NewMemoryLocker(), session.NewMemoryInvocations(session.DefaultInvocationRetention)
		return sessiontest.GateParts{Gate: session.NewGate(l, s), Locker: l, Invocations: s, Sessions: session.NewMemory()}
	})
}
