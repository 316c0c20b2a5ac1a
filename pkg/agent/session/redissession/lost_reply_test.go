package redissession_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/redissession"
)

// An append whose reply is lost is not sent again by the client library:
// the caller gets the error and the events are stored once (review
// finding: go-redis retries a plain pipeline after a read error, which
// stored the events twice).
func TestAppendWithALostReplyIsNotRepeated(t *testing.T) {
	rdb, prefix := redistest.Client(t)
	p := redistest.NewReplyDropper(t, rdb.Options().Addr, "lost-reply-marker")
	opts := *rdb.Options()
	opts.Addr = p.Addr()
	proxied := redis.NewClient(&opts) // go-redis defaults: MaxRetries 3
	t.Cleanup(func() { proxied.Close() })
	svc, err := redissession.New(proxied, redissession.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k := session.Key{App: "a", UserID: "u", SessionID: "s"}
	ev := &session.Event{InvocationID: "i1", Author: "support", Content: model.NewTextContent(model.RoleModel, "lost-reply-marker")}
	_ = svc.AppendEvent(ctx, k, ev) // the error, if any, is the caller's to handle
	if !p.Dropped() {
		t.Fatal("the proxy never saw the append")
	}
	direct, err := redissession.New(rdb, redissession.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	s, err := direct.Get(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Events) != 1 {
		t.Fatalf("the session holds %d events after one append whose reply was lost, want 1", len(s.Events))
	}
}
