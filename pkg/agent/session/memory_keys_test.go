package session_test

import (
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/sessiontest"
)

func TestMemoryKeyEscaping(t *testing.T) {
	sessiontest.RunKeyEscaping(t, sessiontest.Factory{
		New: func(t *testing.T) session.Service { return session.NewMemory() },
	})
}
