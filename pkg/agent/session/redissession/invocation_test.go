package redissession_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/redissession"
	"github.com/agentfleet/agentfleet/pkg/agent/session/sessiontest"
)

func TestInvocationsConformance(t *testing.T) {
	for _, kind := range redistest.Kinds() {
		t.Run(kind.Name, func(t *testing.T) {
			var last string
			open := func(t *testing.T, rdb redis.UniversalClient, prefix string, retention time.Duration) session.InvocationStore {
				s, err := redissession.NewInvocations(rdb, redissession.Config{Prefix: prefix, InvocationRetention: retention})
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			sessiontest.RunInvocations(t, sessiontest.InvocationFactory{
				New: func(t *testing.T, retention time.Duration) session.InvocationStore {
					rdb, prefix := kind.New(t) // cleans up keys under prefix
					last = prefix
					return open(t, rdb, prefix, retention)
				},
				Reopen: func(t *testing.T) session.InvocationStore {
					rdb, _ := kind.New(t) // a second connection pool
					return open(t, rdb, last, 0)
				},
			})
		})
	}
}
