package redissession_test

import (
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/redissession"
	"github.com/agentfleet/agentfleet/pkg/agent/session/sessiontest"
)

// sessionFactory returns a factory whose Reopen builds a new Service (on a
// new client) over the prefix of the last New.
func sessionFactory(cfg redissession.Config) sessiontest.Factory {
	var last string
	return sessiontest.Factory{
		New: func(t *testing.T) session.Service {
			rdb, prefix := redistest.Client(t)
			last = prefix
			c := cfg
			c.Prefix = prefix
			svc, err := redissession.New(rdb, c)
			if err != nil {
				t.Fatal(err)
			}
			return svc
		},
		Reopen: func(t *testing.T) session.Service {
			rdb, _ := redistest.Client(t)
			c := cfg
			c.Prefix = last
			svc, err := redissession.New(rdb, c)
			if err != nil {
				t.Fatal(err)
			}
			return svc
		},
	}
}

func TestServiceConformance(t *testing.T) {
	sessiontest.Run(t, sessionFactory(redissession.Config{}))
}

func TestServiceConformanceWithSessionTTL(t *testing.T) {
	sessiontest.Run(t, sessionFactory(redissession.Config{SessionTTL: time.Hour}))
}

func TestServiceKeyEscaping(t *testing.T) {
	sessiontest.RunKeyEscaping(t, sessionFactory(redissession.Config{}))
}
