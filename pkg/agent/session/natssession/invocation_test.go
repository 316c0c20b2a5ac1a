package natssession_test

import (
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/natssession"
	"github.com/agentfleet/agentfleet/pkg/agent/session/sessiontest"
)

func TestInvocationsConformance(t *testing.T) {
	var (
		last    *env
		lastCfg natssession.Config
	)
	open := func(t *testing.T, e *env, cfg natssession.Config) session.InvocationStore {
		s, err := natssession.NewInvocations(ctx, e.js(t), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	sessiontest.RunInvocations(t, sessiontest.InvocationFactory{
		New: func(t *testing.T, retention time.Duration) session.InvocationStore {
			last = newEnv(t)
			lastCfg = config()
			lastCfg.InvocationRetention = retention
			return open(t, last, lastCfg)
		},
		Reopen: func(t *testing.T) session.InvocationStore {
			last.restart(t)
			return open(t, last, lastCfg)
		},
	})
}
