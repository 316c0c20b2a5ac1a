package session_test

import (
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/sessiontest"
)

func TestMemoryInvocationsConformance(t *testing.T) {
	sessiontest.RunInvocations(t, sessiontest.InvocationFactory{
		New: func(t *testing.T, retention time.Duration) session.InvocationStore {
			return session.NewMemoryInvocations(retention)
		},
	})
}
