package redissession_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/redissession"
)

func TestConfigDefaultsAndValidate(t *testing.T) {
	c := redissession.Config{}.WithDefaults()
	if c.Prefix != redissession.DefaultPrefix || c.InvocationRetention != session.DefaultInvocationRetention || c.SessionTTL != 0 {
		t.Fatalf("defaults = %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]redissession.Config{
		"empty prefix":       {InvocationRetention: time.Hour},
		"negative ttl":       {Prefix: "p:", SessionTTL: -time.Second, InvocationRetention: time.Hour},
		"sub-ms ttl":         {Prefix: "p:", SessionTTL: time.Microsecond, InvocationRetention: time.Hour},
		"negative retention": {Prefix: "p:", InvocationRetention: -time.Hour},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%s: Validate accepted %+v", name, bad)
		}
	}
	if _, err := redissession.New(nil, redissession.Config{SessionTTL: -1}); err == nil {
		t.Fatal("New accepted an invalid config")
	}
}

// TestKeyLayout pins the documented layout: a session's keys share a hash
// tag, segments are escaped, and the TTL applies to all of them.
func TestKeyLayout(t *testing.T) {
	rdb, prefix := redistest.Client(t)
	svc, err := redissession.New(rdb, redissession.Config{Prefix: prefix, SessionTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k := session.Key{App: "sup:port", UserID: "u{1}", SessionID: "50%"}
	if err := svc.AppendEvent(ctx, k, &session.Event{InvocationID: "i1", Author: "support",
		Actions: session.Actions{StateDelta: map[string]any{"n": 1}}}); err != nil {
		t.Fatal(err)
	}
	base := prefix + "sess:{sup%3Aport:u%7B1%7D:50%25}"
	for _, key := range []string{base + ":events", base + ":state", base + ":meta"} {
		ttl, err := rdb.PTTL(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl <= 0 || ttl > time.Hour {
			t.Fatalf("%s: PTTL %v, want an existing key expiring within 1h", key, ttl)
		}
	}
}

func TestUnreachableRedisIsAnError(t *testing.T) {
	opts, err := redis.ParseURL(redistest.ClosedURL())
	if err != nil {
		t.Fatal(err)
	}
	opts.MaxRetries = -1
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	svc, err := redissession.New(rdb, redissession.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	k := session.Key{App: "a", UserID: "u", SessionID: "s"}
	err = svc.AppendEvent(ctx, k, &session.Event{InvocationID: "i1", Author: "support"})
	if err == nil {
		t.Fatal("AppendEvent on an unreachable Redis succeeded")
	}
	if _, err := svc.Get(ctx, k); err == nil || errors.Is(err, session.ErrNotFound) {
		t.Fatalf("Get on an unreachable Redis = %v, want a connection error (not ErrNotFound)", err)
	}
}
