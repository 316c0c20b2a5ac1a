package redissession_test

import (
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/redissession"
	"github.com/agentfleet/agentfleet/pkg/agent/session/sessiontest"
)

// sessionFactory returns a factory on clients of kind whose Reopen builds
// a new Service (on a new client) over the prefix of the last New.
func sessionFactory(kind redistest.Kind, cfg redissession.Config) sessiontest.Factory {
	var last string
	return sessiontest.Factory{
		New: func(t *testing.T) session.Service {
			rdb, prefix := kind.New(t)
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
			rdb, _ := kind.New(t)
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
	for _, k := range redistest.Kinds() {
		t.Run(k.Name, func(t *testing.T) { sessiontest.Run(t, sessionFactory(k, redissession.Config{})) })
	}
}

func TestServiceConformanceWithSessionTTL(t *testing.T) {
	for _, k := range redistest.Kinds() {
		t.Run(k.Name, func(t *testing.T) { sessiontest.Run(t, sessionFactory(k, redissession.Config{SessionTTL: time.Hour})) })
	}
}

func TestServiceKeyEscaping(t *testing.T) {
	sessiontest.RunKeyEscaping(t, sessionFactory(redistest.Kinds()[0], redissession.Config{}))
}
