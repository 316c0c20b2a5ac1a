package redisstore_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
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
	lines := strings.Split(c.Get(ctx, rk).Val(), "\n")
	if len(lines) != 6 || lines[0] != "in_progress" || lines[1] != "w/1" || lines[2] != "1" || !strings.Contains(lines[5], `"invocation":"inv-1"`) {
		t.Fatalf("record at %s = %q", rk, lines)
	}
	if ms, err := strconv.ParseInt(lines[4], 10, 64); err != nil || time.Until(time.UnixMilli(ms)) < 4*time.Second || time.Until(time.UnixMilli(ms)) > 6*time.Second {
		t.Fatalf("lease_until line %q, want about now+5s", lines[4])
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
	lines = strings.SplitN(c.Get(ctx, rk).Val(), "\n", 8)
	if len(lines) != 8 || lines[0] != "completed" || lines[1] != "w/1" || lines[7] != `{"status":"ok"}` {
		t.Fatalf("completed record at %s = %q", rk, lines)
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

// An owner token with a newline could match another record's header lines,
// so the store refuses it before talking to Redis.
func TestOwnerWithNewlineRefused(t *testing.T) {
	c, prefix := redistest.Client(t)
	s := redisstore.New(c, redisstore.Config{Prefix: prefix})
	ctx := context.Background()
	tk := idempotency.Ticket{Key: "idem:a:refund:1", InvocationID: "inv-1", Owner: "w\n1"}
	if _, err := s.Claim(ctx, idempotency.ClaimRequest{Ticket: tk, Lease: time.Second}); err == nil || !strings.Contains(err.Error(), "newline") {
		t.Fatalf("Claim with a newline owner = %v", err)
	}
	if err := s.Complete(ctx, tk, []byte(`{}`), time.Hour); err == nil || !strings.Contains(err.Error(), "newline") {
		t.Fatalf("Complete with a newline owner = %v", err)
	}
	if n := c.Exists(ctx, prefix+tk.Key).Val(); n != 0 {
		t.Fatalf("a record was written")
	}
}

// A claim keeps the invocation's index for Config.Retention; a Complete with
// a longer retention extends the index so it outlives the record.
func TestLongerRetentionExtendsIndex(t *testing.T) {
	c, prefix := redistest.Client(t)
	s := redisstore.New(c, redisstore.Config{Prefix: prefix, Retention: time.Minute})
	ctx := context.Background()
	tk := idempotency.Ticket{Key: "idem:a:refund:1", InvocationID: "inv-1", Owner: "w/1"}
	if _, err := s.Claim(ctx, idempotency.ClaimRequest{Ticket: tk, Lease: time.Second}); err != nil {
		t.Fatal(err)
	}
	idx := prefix + redisstore.DefaultIndexPrefix + "inv-1"
	want := time.Minute + time.Second + redisstore.DefaultLeaseMargin + redisstore.IndexSlack
	if ttl := c.PTTL(ctx, idx).Val(); ttl > want || ttl < want-2*time.Second {
		t.Fatalf("index TTL after claim = %s, want Retention 1m + lease 1s + margin + IndexSlack = %s", ttl, want)
	}
	if err := s.Complete(ctx, tk, []byte(`{"status":"ok"}`), 3*time.Hour); err != nil {
		t.Fatal(err)
	}
	if rttl, ittl := c.PTTL(ctx, prefix+tk.Key).Val(), c.PTTL(ctx, idx).Val(); rttl < 2*time.Hour || ittl < rttl {
		t.Fatalf("record TTL %s, index TTL %s: the index must outlive the record", rttl, ittl)
	}
	recs, err := s.Effects(ctx, "inv-1")
	if err != nil || len(recs) != 1 || recs[0].Key != tk.Key || string(recs[0].Result) != `{"status":"ok"}` {
		t.Fatalf("Effects = %+v, %v", recs, err)
	}
}

// A key claimed again long after its first claim (the in-progress record of
// a crashed run expired; the invocation is replayed a day later) must leave
// an index that outlives the completed record, or Effects would lose the
// refund while its record still guards it.
func TestLateReclaimKeepsTheIndexAlive(t *testing.T) {
	c, prefix := redistest.Client(t)
	s := redisstore.New(c, redisstore.Config{Prefix: prefix, Retention: 24 * time.Hour})
	ctx := context.Background()
	tk := idempotency.Ticket{Key: "idem:support:refund:late", InvocationID: "inv-late", Owner: "w1/run1"}
	req := idempotency.ClaimRequest{Ticket: tk, Agent: "support", Tool: "refund", Lease: time.Minute}
	if _, err := s.Claim(ctx, req); err != nil {
		t.Fatal(err)
	}
	// The worker died; its record expired. A day later only 30 minutes of
	// the index are left (PEXPIRE and DEL stand in for the clock).
	idx := prefix + redisstore.DefaultIndexPrefix + "inv-late"
	c.Del(ctx, prefix+tk.Key)
	c.PExpire(ctx, idx, 30*time.Minute)
	req.Owner = "w2/replay1"
	if cl, err := s.Claim(ctx, req); err != nil || cl.Outcome != idempotency.OutcomeAcquired {
		t.Fatalf("claim after the expiry: %+v, %v", cl, err)
	}
	if rttl, ittl := c.PTTL(ctx, prefix+tk.Key).Val(), c.PTTL(ctx, idx).Val(); ittl < rttl {
		t.Fatalf("index TTL %s < in-progress record TTL %s after the late claim", ittl, rttl)
	}
	// The complete makes the index outlive the completed record, even with
	// a longer retention than configured.
	if err := s.Complete(ctx, idempotency.Ticket{Key: tk.Key, InvocationID: "inv-late", Owner: req.Owner}, []byte(`{"refund_id":"R-1"}`), 48*time.Hour); err != nil {
		t.Fatal(err)
	}
	if rttl, ittl := c.PTTL(ctx, prefix+tk.Key).Val(), c.PTTL(ctx, idx).Val(); ittl < rttl {
		t.Fatalf("index TTL %s < record TTL %s", ittl, rttl)
	}
	if recs, err := s.Effects(ctx, "inv-late"); err != nil || len(recs) != 1 || recs[0].Owner != "w2/replay1" {
		t.Fatalf("Effects = %+v, %v", recs, err)
	}
}

// A claim never shortens the index: after a Complete with a retention
// longer than configured, a claim of another key of the same invocation
// must not cut the index back to Config.Retention (the claim's EXPIRE NX
// leaves an index with a TTL alone).
func TestClaimNeverShortensTheIndex(t *testing.T) {
	c, prefix := redistest.Client(t)
	s := redisstore.New(c, redisstore.Config{Prefix: prefix, Retention: time.Minute})
	ctx := context.Background()
	first := idempotency.Ticket{Key: "idem:a:refund:1", InvocationID: "inv-1", Owner: "w/1"}
	if _, err := s.Claim(ctx, idempotency.ClaimRequest{Ticket: first, Lease: time.Second}); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(ctx, first, []byte(`{"ok":true}`), 5*time.Hour); err != nil {
		t.Fatal(err)
	}
	second := idempotency.Ticket{Key: "idem:a:refund:2", InvocationID: "inv-1", Owner: "w/1"}
	if cl, err := s.Claim(ctx, idempotency.ClaimRequest{Ticket: second, Lease: time.Second}); err != nil || cl.Outcome != idempotency.OutcomeAcquired {
		t.Fatalf("second claim: %+v, %v", cl, err)
	}
	idx := prefix + redisstore.DefaultIndexPrefix + "inv-1"
	if rttl, ittl := c.PTTL(ctx, prefix+first.Key).Val(), c.PTTL(ctx, idx).Val(); rttl < 4*time.Hour || ittl < rttl {
		t.Fatalf("record TTL %s, index TTL %s after a later claim: the index must outlive the record", rttl, ittl)
	}
	if n := c.SCard(ctx, idx).Val(); n != 2 {
		t.Fatalf("index holds %d keys, want 2", n)
	}
}

// A long-running tool renews its lease; each renewal keeps the index alive
// for a Complete that comes up to lease + margin later.
func TestRenewKeepsTheIndexAlive(t *testing.T) {
	c, prefix := redistest.Client(t)
	s := redisstore.New(c, redisstore.Config{Prefix: prefix, Retention: time.Hour})
	ctx := context.Background()
	tk := idempotency.Ticket{Key: "idem:a:export:1", InvocationID: "inv-1", Owner: "w/1"}
	if _, err := s.Claim(ctx, idempotency.ClaimRequest{Ticket: tk, Lease: time.Second}); err != nil {
		t.Fatal(err)
	}
	idx := prefix + redisstore.DefaultIndexPrefix + "inv-1"
	c.PExpire(ctx, idx, 10*time.Second) // the clock stands in: the tool ran for most of the index's life
	if _, err := s.Renew(ctx, tk, 2*time.Hour); err != nil {
		t.Fatal(err)
	}
	if ttl := c.PTTL(ctx, idx).Val(); ttl < 3*time.Hour {
		t.Fatalf("index TTL after a 2h renewal = %s, want at least Retention 1h + 2h", ttl)
	}
	if err := s.Complete(ctx, tk, []byte(`{"ok":true}`), time.Hour); err != nil {
		t.Fatal(err)
	}
	if rttl, ittl := c.PTTL(ctx, prefix+tk.Key).Val(), c.PTTL(ctx, idx).Val(); ittl < rttl {
		t.Fatalf("index TTL %s < record TTL %s", ittl, rttl)
	}
}

// The claim's SADD is not atomic with its SET NX, and a late claim may go
// to an index that expires before its record. Whatever happened to the
// index meanwhile, a completed record must be listed by Effects: the
// complete script adds the key again (review finding: a key lost from the
// index stayed lost for the record's whole retention).
func TestCompleteRestoresTheIndexMember(t *testing.T) {
	c, prefix := redistest.Client(t)
	s := redisstore.New(c, redisstore.Config{Prefix: prefix, Retention: time.Hour})
	ctx := context.Background()
	idx := prefix + redisstore.DefaultIndexPrefix + "inv-1"
	claim := func(key, owner string) idempotency.Ticket {
		t.Helper()
		tk := idempotency.Ticket{Key: key, InvocationID: "inv-1", Owner: owner}
		if cl, err := s.Claim(ctx, idempotency.ClaimRequest{Ticket: tk, Lease: time.Minute}); err != nil || cl.Outcome != idempotency.OutcomeAcquired {
			t.Fatalf("claim %s: %+v, %v", key, cl, err)
		}
		return tk
	}
	complete := func(tk idempotency.Ticket) {
		t.Helper()
		if err := s.Complete(ctx, tk, []byte(`{"ok":true}`), time.Hour); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("index expired and recreated by another claim", func(t *testing.T) {
		k1 := claim("idem:a:refund:1", "w1/a")
		c.Del(ctx, idx) // the index ran out under the in-progress record
		k2 := claim("idem:a:refund:2", "w1/b")
		complete(k1)
		complete(k2)
		recs, err := s.Effects(ctx, "inv-1")
		if err != nil || len(recs) != 2 {
			t.Fatalf("Effects = %d records, %v; want both completed keys", len(recs), err)
		}
	})
	t.Run("stale release between the claim's SADD and SET", func(t *testing.T) {
		k3 := claim("idem:a:refund:3", "w2/a")
		c.SRem(ctx, idx, k3.Key) // the interleaved Release's SREM, after this claim's SADD
		complete(k3)
		if ok := c.SIsMember(ctx, idx, k3.Key).Val(); !ok {
			t.Fatal("the completed key is not in its invocation's index")
		}
	})
}
