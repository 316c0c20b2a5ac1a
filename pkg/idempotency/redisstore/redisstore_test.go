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
	for _, kind := range redistest.Kinds() {
		t.Run(kind.Name, func(t *testing.T) {
			idempotencytest.Run(t, idempotencytest.Factory{
				New: func(t *testing.T, retention time.Duration) idempotencytest.Instance {
					c, prefix := kind.New(t)
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
		})
	}
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

// A Release leaves the key in its invocation's index: a stale owner's
// Release can run between another claim's SADD and its SET NX (the claim's
// pipeline is not atomic), and an SREM there would leave the new owner's
// record unlisted, while the complete no longer touches the index.
// Effects still skips a released key, since it has no record.
func TestReleaseKeepsTheIndexMember(t *testing.T) {
	c, prefix := redistest.Client(t)
	s := redisstore.New(c, redisstore.Config{Prefix: prefix, Retention: time.Hour})
	ctx := context.Background()
	idx := prefix + redisstore.DefaultIndexPrefix + "inv-1"
	tk := idempotency.Ticket{Key: "idem:a:refund:1", InvocationID: "inv-1", Owner: "w1/a"}
	if _, err := s.Claim(ctx, idempotency.ClaimRequest{Ticket: tk, Lease: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, tk); err != nil {
		t.Fatal(err)
	}
	if ok := c.SIsMember(ctx, idx, tk.Key).Val(); !ok {
		t.Fatal("Release removed the key from its invocation's index")
	}
	if recs, err := s.Effects(ctx, "inv-1"); err != nil || len(recs) != 0 {
		t.Fatalf("Effects after Release = %+v, %v; want none", recs, err)
	}
	// The next owner's SET NX after its SADD: its completed record is listed.
	tk.Owner = "w2/a"
	if cl, err := s.Claim(ctx, idempotency.ClaimRequest{Ticket: tk, Lease: time.Minute}); err != nil || cl.Outcome != idempotency.OutcomeAcquired {
		t.Fatalf("claim after release: %+v, %v", cl, err)
	}
	if err := s.Complete(ctx, tk, []byte(`{"ok":true}`), time.Hour); err != nil {
		t.Fatal(err)
	}
	if recs, err := s.Effects(ctx, "inv-1"); err != nil || len(recs) != 1 || recs[0].Owner != "w2/a" {
		t.Fatalf("Effects = %+v, %v", recs, err)
	}
}

// Every claim, not only the one that creates the index, leaves the index
// live for Retention + lease + LeaseMargin + IndexSlack, so the Complete
// that follows can leave the index alone.
func TestEveryClaimExtendsTheIndex(t *testing.T) {
	c, prefix := redistest.Client(t)
	s := redisstore.New(c, redisstore.Config{Prefix: prefix, Retention: time.Hour})
	ctx := context.Background()
	idx := prefix + redisstore.DefaultIndexPrefix + "inv-1"
	first := idempotency.Ticket{Key: "idem:a:refund:1", InvocationID: "inv-1", Owner: "w/1"}
	if _, err := s.Claim(ctx, idempotency.ClaimRequest{Ticket: first, Lease: time.Minute}); err != nil {
		t.Fatal(err)
	}
	c.PExpire(ctx, idx, 10*time.Minute) // the clock stands in: the invocation's first claim was long ago
	second := idempotency.Ticket{Key: "idem:a:refund:2", InvocationID: "inv-1", Owner: "w/1"}
	if _, err := s.Claim(ctx, idempotency.ClaimRequest{Ticket: second, Lease: time.Minute}); err != nil {
		t.Fatal(err)
	}
	want := time.Hour + time.Minute + redisstore.DefaultLeaseMargin + redisstore.IndexSlack
	if ttl := c.PTTL(ctx, idx).Val(); ttl < want-2*time.Second {
		t.Fatalf("index TTL after a later claim = %s, want %s", ttl, want)
	}
	if err := s.Complete(ctx, second, []byte(`{"ok":true}`), time.Hour); err != nil {
		t.Fatal(err)
	}
	if rttl, ittl := c.PTTL(ctx, prefix+second.Key).Val(), c.PTTL(ctx, idx).Val(); ittl < rttl+redisstore.IndexSlack-2*time.Second {
		t.Fatalf("index TTL %s, record TTL %s: want the index to outlive the record by IndexSlack", ittl, rttl)
	}
}

// Under contention (claims, takeovers, releases and completions of a few
// keys of one invocation, interleaved by 8 goroutines), every record that
// exists at the end is listed by its invocation's index, and the index
// outlives it.
func TestIndexListsEveryRecordUnderContention(t *testing.T) {
	c, prefix := redistest.Client(t)
	s := redisstore.New(c, redisstore.Config{Prefix: prefix, Retention: time.Hour, LeaseMargin: time.Millisecond})
	ctx := context.Background()
	idx := prefix + redisstore.DefaultIndexPrefix + "inv-1"
	keys := []string{"idem:a:refund:1", "idem:a:refund:2", "idem:a:refund:3", "idem:a:refund:4"}
	errc := make(chan error, 8)
	for g := range 8 {
		go func() {
			for i := range 60 {
				tk := idempotency.Ticket{Key: keys[(g+i)%len(keys)], InvocationID: "inv-1", Owner: "w" + strconv.Itoa(g) + "/" + strconv.Itoa(i)}
				cl, err := s.Claim(ctx, idempotency.ClaimRequest{Ticket: tk, Lease: 2 * time.Millisecond})
				if err != nil {
					errc <- err
					return
				}
				if cl.Outcome != idempotency.OutcomeAcquired && cl.Outcome != idempotency.OutcomeReclaimed {
					continue
				}
				switch i % 3 {
				case 0:
					err = s.Release(ctx, tk)
				case 1:
					err = s.Complete(ctx, tk, []byte(`{"ok":true}`), time.Hour)
				} // case 2: the owner "dies"; the lease runs out
				if err != nil && !errors.Is(err, idempotency.ErrLeaseLost) && !errors.Is(err, idempotency.ErrNotOwner) {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
	}
	for range 8 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	ittl := c.PTTL(ctx, idx).Val()
	for _, k := range keys {
		rttl := c.PTTL(ctx, prefix+k).Val()
		if rttl < 0 {
			continue // no record (released or expired)
		}
		if !c.SIsMember(ctx, idx, k).Val() {
			t.Errorf("%s has a record but is not in the index", k)
		}
		if ittl < rttl {
			t.Errorf("index TTL %s < record TTL %s of %s", ittl, rttl, k)
		}
	}
}
