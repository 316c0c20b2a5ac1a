package redissession_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/redissession"
	"github.com/agentfleet/agentfleet/pkg/agent/session/sessiontest"
)

func TestLockerConformance(t *testing.T) {
	for _, kind := range redistest.Kinds() {
		t.Run(kind.Name, func(t *testing.T) {
			var last string
			open := func(t *testing.T, rdb redis.UniversalClient, prefix string) session.Locker {
				l, err := redissession.NewLocker(rdb, redissession.Config{Prefix: prefix})
				if err != nil {
					t.Fatal(err)
				}
				return l
			}
			sessiontest.RunLocker(t, sessiontest.LockerFactory{
				New: func(t *testing.T) session.Locker {
					rdb, prefix := kind.New(t) // cleans up keys under prefix
					last = prefix
					return open(t, rdb, prefix)
				},
				Reopen: func(t *testing.T) session.Locker {
					rdb, _ := kind.New(t) // a second connection pool
					return open(t, rdb, last)
				},
			})
		})
	}
}
