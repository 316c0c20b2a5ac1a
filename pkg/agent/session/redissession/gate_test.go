package redissession_test

import (
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/pkg/agent/session/redissession"
	"github.com/agentfleet/agentfleet/pkg/agent/session/sessiontest"
)

func TestGateConformance(t *testing.T) {
	sessiontest.RunGate(t, func(t *testing.T) sessiontest.GateParts {
		rdb, prefix := redistest.Client(t)
		cfg := redissession.Config{Prefix: prefix}
		g, err := redissession.NewGate(rdb, cfg)
		if err != nil {
			t.Fatal(err)
		}
		l, err := redissession.NewLocker(rdb, cfg)
		if err != nil {
			t.Fatal(err)
		}
		s, err := redissession.NewInvocations(rdb, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return sessiontest.GateParts{Gate: g, Locker: l, Invocations: s}
	})
}

func TestGateRefusesCluster(t *testing.T) {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	defer c.Close()
	if _, err := redissession.NewGate(c, redissession.Config{}); !errors.Is(err, redissession.ErrClusterGate) {
		t.Fatalf("NewGate(cluster) = %v, want ErrClusterGate", err)
	}
}
