package session_test

import (
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/sessiontest"
)

func TestMemoryLockerConformance(t *testing.T) {
	sessiontest.RunLocker(t, sessiontest.LockerFactory{
		New: func(t *testing.T) session.Locker { return session.NewMemoryLocker() },
	})
}
