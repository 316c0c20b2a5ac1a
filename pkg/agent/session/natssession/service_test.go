package natssession_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/natssession"
	"github.com/agentfleet/agentfleet/pkg/agent/session/sessiontest"
)

func sessionFactory(cfg natssession.Config) sessiontest.Factory {
	var last *env
	open := func(t *testing.T, e *env) session.Service {
		svc, err := natssession.NewService(ctx, e.js(t), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return svc
	}
	return sessiontest.Factory{
		New: func(t *testing.T) session.Service {
			last = newEnv(t)
			return open(t, last)
		},
		Reopen: func(t *testing.T) session.Service {
			last.restart(t)
			return open(t, last)
		},
	}
}

func TestServiceConformance(t *testing.T) {
	sessiontest.Run(t, sessionFactory(config()))
}

func TestServiceKeyEscaping(t *testing.T) {
	sessiontest.RunKeyEscaping(t, sessionFactory(config()))
}

func TestSessionTooLarge(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	svc, err := natssession.NewService(ctx, js, natssession.Config{MaxValueSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	k := session.Key{App: "support", UserID: "u1", SessionID: "big"}
	small := &session.Event{InvocationID: "i1", Author: "support", Content: model.NewTextContent(model.RoleModel, "ok")}
	if err := svc.AppendEvent(ctx, k, small); err != nil {
		t.Fatal(err)
	}
	big := &session.Event{InvocationID: "i1", Author: "support",
		Content: model.NewTextContent(model.RoleModel, strings.Repeat("x", 5000))}
	if err := svc.AppendEvent(ctx, k, big); !errors.Is(err, natssession.ErrSessionTooLarge) {
		t.Fatalf("oversized append = %v, want ErrSessionTooLarge", err)
	}
	s, err := svc.Get(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Events) != 1 {
		t.Fatalf("rejected append stored something: %d events", len(s.Events))
	}
}

func TestConfigDefaultsAndValidate(t *testing.T) {
	c := natssession.Config{}.WithDefaults()
	if c.SessionBucket != natssession.DefaultSessionBucket || c.LockBucket != natssession.DefaultLockBucket ||
		c.InvocationBucket != natssession.DefaultInvocationBucket || c.InvocationRetention != session.DefaultInvocationRetention ||
		c.LockMaxAge != natssession.DefaultLockMaxAge || c.Replicas != 1 || c.MaxConflictRetries != natssession.DefaultMaxConflictRetries {
		t.Fatalf("defaults = %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(*natssession.Config){
		"bad bucket":        func(c *natssession.Config) { c.SessionBucket = "a.b" },
		"negative ttl":      func(c *natssession.Config) { c.SessionTTL = -1 },
		"tiny lock max age": func(c *natssession.Config) { c.LockMaxAge = 1 },
		"tiny retention":    func(c *natssession.Config) { c.InvocationRetention = 1 },
		"replicas":          func(c *natssession.Config) { c.Replicas = 7 },
	} {
		bad := c
		mutate(&bad)
		if err := bad.Validate(); err == nil {
			t.Errorf("%s: Validate accepted %+v", name, bad)
		}
	}
}
