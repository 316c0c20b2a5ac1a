package redisstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
	"github.com/agentfleet/agentfleet/pkg/idempotency/idempotencytest"
	"github.com/agentfleet/agentfleet/pkg/idempotency/redisstore"
)

func newClient(t *testing.T, url string) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	opts.MaxRetries = -1 // fail fast on a closed port
	opts.DialTimeout = time.Second
	c := redis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	return c
}

func TestRedisConformance(t *testing.T) {
	idempotencytest.Run(t, idempotencytest.Factory{
		New: func(t *testing.T, retention time.Duration) idempotencytest.Instance {
			c, prefix := redistest.Client(t)
			cfg := redisstore.Config{Prefix: prefix}
			return idempotencytest.Instance{
				Store: redisstore.New(c, cfg),
				Reopen: func(t *testing.T) idempotency.Store {
					return redisstore.New(newClient(t, redistest.URL()), cfg)
				},
			}
		},
		Unreachable: func(t *testing.T) idempotency.Store {
			return redisstore.New(newClient(t, redistest.ClosedURL()), redisstore.Config{Prefix: redistest.Prefix(t)})
		},
		MinRetention: 300 * time.Millisecond,
	})
}

// TestKeysAndTTLs checks the Redis layout on-call relies on: the record under
// the prefix and the key, the index set, and the TTLs (lease + margin while
// in progress, retention once completed).
func TestKeysAndTTLs(t *testing.T) {
	c, prefix := redistest.Client(t)
	s := redisstore.New(c, redisstore.Config{Prefix: prefix, LeaseMargin: 10 * time.Second})
	ctx := context.Background()
	k, err := idempotency.DeriveKey(idempotency.KeyInput{Agent: "support", InvocationID: "inv-1", Tool: "refund", Args: map[string]any{"order_id": "A-1"}})
	if err != nil {
		t.Fatal(err)
	}
	tk := idempotency.Ticket{Key: k.String(), InvocationID: "inv-1", Owner: "w/1"}
	if _, err := s.Claim(ctx, idempotency.ClaimRequest{Ticket: tk, Agent: "support", Tool: "refund", Lease: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	rk := prefix + k.String()
	var stored struct {
		State, Owner, Invocation string
		LeaseUntil               int64 `json:"lease_until"`
	}
	if err := json.Unmarshal([]byte(c.Get(ctx, rk).Val()), &stored); err != nil || stored.State != "in_progress" || stored.Owner != "w/1" || stored.Invocation != "inv-1" {
		t.Fatalf("record at %s = %+v, %v", rk, stored, err)
	}
	if d := time.Until(time.UnixMilli(stored.LeaseUntil)); d < 4*time.Second || d > 6*time.Second {
		t.Fatalf("lease_until in %s, want about 5s (server clock)", d)
	}
	if ttl := c.PTTL(ctx, rk).Val(); ttl <= 10*time.Second || ttl > 15*time.Second {
		t.Fatalf("in-progress TTL = %s, want lease 5s + margin 10s", ttl)
	}
	if m := c.SMembers(ctx, prefix+redisstore.DefaultIndexPrefix+"inv-1").Val(); len(m) != 1 || m[0] != k.String() {
		t.Fatalf("index = %v", m)
	}
	if err := s.Complete(ctx, tk, []byte(`{"status":"ok"}`), time.Hour); err != nil {
		t.Fatal(err)
	}
	if ttl := c.PTTL(ctx, rk).Val(); ttl <= 59*time.Minute || ttl > time.Hour {
		t.Fatalf("completed TTL = %s, want the retention 1h", ttl)
	}
	if ttl := c.PTTL(ctx, prefix+redisstore.DefaultIndexPrefix+"inv-1").Val(); ttl <= 59*time.Minute {
		t.Fatalf("index TTL = %s, want at least the retention", ttl)
	}
}

func TestUnreachableIsStoreError(t *testing.T) {
	s := redisstore.New(newClient(t, redistest.ClosedURL()), redisstore.Config{})
	err := s.Complete(context.Background(), idempotency.Ticket{Key: "k", InvocationID: "i", Owner: "o"}, []byte(`{}`), time.Hour)
	var se *idempotency.StoreError
	if !errors.As(err, &se) || se.Backend != "redis" || se.Op != "complete" || !errors.Is(err, idempotency.ErrStoreUnavailable) {
		t.Fatalf("Complete on a closed port = %v", err)
	}
}
