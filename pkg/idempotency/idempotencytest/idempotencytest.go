// Package idempotencytest is the conformance suite every idempotency.Store
// backend runs (in-memory, Redis, NATS KV): one exported Run function, many
// subtests, real backends only. Timing-dependent checks poll a condition with
// a deadline instead of sleeping a fixed time where they can.
package idempotencytest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// Agent is the agent name the suite puts in keys.
const Agent = "support"

// Instance is one store under test.
type Instance struct {
	// Store is a fresh, empty store.
	Store idempotency.Store
	// Reopen returns a second store instance (a new client or connection)
	// over the same data as Store, to prove results survive a restart. nil
	// for backends that are not durable (the subtest is skipped).
	Reopen func(t *testing.T) idempotency.Store
}

// Factory makes stores for the suite.
type Factory struct {
	// New returns an empty store isolated from every other subtest (own key
	// prefix, bucket or server). Completed records must expire after
	// retention when the backend fixes retention per store (NATS KV bucket
	// MaxAge); retention 0 means a long one. Clean up with t.Cleanup.
	New func(t *testing.T, retention time.Duration) Instance
	// Unreachable returns a store whose backend cannot be reached (a client
	// on a closed port, a stopped server). nil: the subtest is skipped.
	Unreachable func(t *testing.T) idempotency.Store
	// MinRetention is the shortest retention the backend expires reliably;
	// the retention subtest uses it. 0: 300ms.
	MinRetention time.Duration
	// ExpiryTimeout bounds the wait for a record to expire after
	// MinRetention. 0: 15s.
	ExpiryTimeout time.Duration
}

// Run runs the conformance suite against f.
func Run(t *testing.T, f Factory) {
	t.Helper()
	if f.MinRetention == 0 {
		f.MinRetention = 300 * time.Millisecond
	}
	if f.ExpiryTimeout == 0 {
		f.ExpiryTimeout = 15 * time.Second
	}
	t.Run("ClaimStates", func(t *testing.T) { testClaimStates(t, f) })
	t.Run("ReleaseThenClaim", func(t *testing.T) { testRelease(t, f) })
	t.Run("ConcurrentClaimsOneWinner", func(t *testing.T) { testConcurrentClaims(t, f) })
	t.Run("Wrapper50GoroutinesRunOnce", func(t *testing.T) { testWrapperConcurrent(t, f) })
	t.Run("LeaseExpiryReclaimAndStaleOwnerFenced", func(t *testing.T) { testLeaseExpiry(t, f) })
	t.Run("CompletedRecordOutlivesItsLease", func(t *testing.T) { testCompletedOutlivesLease(t, f) })
	t.Run("WrapperReplaysAfterTheLease", func(t *testing.T) { testWrapperReplaysAfterLease(t, f) })
	t.Run("ConcurrentReclaimsOneWinner", func(t *testing.T) { testConcurrentReclaims(t, f) })
	t.Run("Wrapper50GoroutinesOnExpiredLeaseRunOnce", func(t *testing.T) { testWrapperConcurrentReclaim(t, f) })
	t.Run("OwnerCompletesAndRenewsAfterItsLeaseWithoutTakeover", func(t *testing.T) { testLateOwner(t, f) })
	t.Run("RenewExtendsLease", func(t *testing.T) { testRenew(t, f) })
	t.Run("RefusesBadInput", func(t *testing.T) { testRefusesBadInput(t, f) })
	t.Run("WrapperRenewsLongTool", func(t *testing.T) { testWrapperRenews(t, f) })
	t.Run("WrapperReleasesRetryableAndNotApplied", func(t *testing.T) { testWrapperRelease(t, f) })
	t.Run("WrapperStoresAnUnknownOutcome", func(t *testing.T) { testWrapperUnknownOutcome(t, f) })
	t.Run("WrapperCompletesAResultTooLargeForTheStore", func(t *testing.T) { testWrapperResultTooLarge(t, f) })
	t.Run("WrapperWaitsThenInProgressError", func(t *testing.T) { testWrapperInProgress(t, f) })
	t.Run("KeyFieldsAndKeyInContext", func(t *testing.T) { testKeyFields(t, f) })
	t.Run("Effects", func(t *testing.T) { testEffects(t, f) })
	t.Run("SurvivesReopen", func(t *testing.T) { testReopen(t, f) })
	t.Run("WrapperReplaysBigIntegersExactly", func(t *testing.T) { testWrapperReplaysBigIntegers(t, f) })
	t.Run("RetentionExpiry", func(t *testing.T) { testRetention(t, f) })
	t.Run("UnreachableFailsClosed", func(t *testing.T) { testUnreachable(t, f) })
}

// ---- helpers ----

func newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

func ctxFor(t *testing.T, invocationID string) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return tool.WithContext(ctx, &tool.Context{
		InvocationID:   invocationID,
		Session:        session.Key{App: Agent, UserID: "u1", SessionID: "s1"},
		FunctionCallID: newID("fc"),
	})
}

// countingTool is a Tool whose Run calls fn and counts runs.
type countingTool struct {
	name string
	runs atomic.Int64
	fn   func(ctx context.Context, args map[string]any) (map[string]any, error)
}

// Name implements tool.Tool.
func (c *countingTool) Name() string { return c.name }

// Description implements tool.Tool.
func (c *countingTool) Description() string { return "test tool " + c.name }

// Declaration implements tool.Tool.
func (c *countingTool) Declaration() *model.ToolDeclaration {
	return &model.ToolDeclaration{Name: c.name}
}

// Run implements tool.Tool, counting runs.
func (c *countingTool) Run(ctx context.Context, args map[string]any) (map[string]any, error) {
	c.runs.Add(1)
	return c.fn(ctx, args)
}

func newTool(name string, fn func(ctx context.Context, args map[string]any) (map[string]any, error)) *countingTool {
	return &countingTool{name: name, fn: fn}
}

func claimReq(key, inv, owner string, lease time.Duration) idempotency.ClaimRequest {
	return idempotency.ClaimRequest{
		Ticket: idempotency.Ticket{Key: key, InvocationID: inv, Owner: owner},
		Agent:  Agent, Tool: toolOf(key), ArgsHash: "h-" + owner, Lease: lease,
	}
}

// toolOf returns the tool segment of "<prefix>:<agent>:<tool>:<hash>".
func toolOf(key string) string {
	parts := strings.Split(key, ":")
	if len(parts) < 4 {
		return "refund"
	}
	return parts[2]
}

func mustClaim(t *testing.T, s idempotency.Store, req idempotency.ClaimRequest, want idempotency.Outcome) idempotency.Claim {
	t.Helper()
	c, err := s.Claim(context.Background(), req)
	if err != nil {
		t.Fatalf("Claim(%s, owner %s): %v", req.Key, req.Owner, err)
	}
	if c.Outcome != want {
		t.Fatalf("Claim(%s, owner %s) outcome = %s (record owner %s, lease until %s), want %s",
			req.Key, req.Owner, c.Outcome, c.Record.Owner, c.Record.LeaseUntil, want)
	}
	return c
}

// eventually polls cond every interval until it returns true or timeout
// passes, then fails with the last message.
func eventually(t *testing.T, timeout, interval time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, msg := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s: %s", timeout, msg)
		}
		time.Sleep(interval)
	}
}

// shortLease is the lease of the subtests that let a lease run out: short,
// so their wait is, and long enough to outlast a few round trips.
const shortLease = 300 * time.Millisecond

// waitLeasesOver returns once the backend lets a lease of length lease,
// claimed at the call, be taken over: every lease of that length or
// shorter claimed before the call has then run out too, as the backend
// judges it (its clock, any allowance for skew), with no fixed sleep. It
// claims and polls a probe key of its own, in an invocation of its own.
func waitLeasesOver(t *testing.T, s idempotency.Store, lease time.Duration) {
	t.Helper()
	probe, inv := testKey("probe"), newID("inv-probe")
	p := mustClaim(t, s, claimReq(probe, inv, "probe-a", lease), idempotency.OutcomeAcquired)
	eventually(t, 10*time.Second+lease, 20*time.Millisecond, func() (bool, string) {
		c, err := s.Claim(context.Background(), claimReq(probe, inv, "probe-b", time.Minute))
		if err != nil {
			t.Fatalf("Claim(probe %s): %v", probe, err)
		}
		return c.Outcome == idempotency.OutcomeReclaimed,
			fmt.Sprintf("the probe's %s lease (until %s) is still not taken over: %s", lease, p.Record.LeaseUntil, c.Outcome)
	})
}

func testKey(tool string) string {
	return "idem:" + Agent + ":" + tool + ":" + newID("k")
}

func wrapOpts(o idempotency.Options) idempotency.Options {
	if o.Lease == 0 {
		o.Lease = 5 * time.Second
	}
	if o.WaitTimeout == 0 {
		o.WaitTimeout = 20 * time.Second
	}
	return o
}

func jsonEqual(t *testing.T, got json.RawMessage, want any) {
	t.Helper()
	w, _ := json.Marshal(want)
	var a, b any
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatalf("stored result %q is not JSON: %v", got, err)
	}
	_ = json.Unmarshal(w, &b)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("stored result = %s, want %s", got, w)
	}
}

// ---- subtests ----

func testClaimStates(t *testing.T, f Factory) {
	s := f.New(t, 0).Store
	ctx := context.Background()
	key, inv := testKey("refund"), newID("inv")
	before := time.Now()
	a := mustClaim(t, s, claimReq(key, inv, "owner-a", 10*time.Second), idempotency.OutcomeAcquired)
	if a.Record.Owner != "owner-a" || a.Record.State != idempotency.StateInProgress || a.Record.Attempts != 1 {
		t.Fatalf("acquired record = %+v", a.Record)
	}
	if lu := a.Record.LeaseUntil; lu.Before(before.Add(9*time.Second)) || lu.After(time.Now().Add(11*time.Second)) {
		t.Fatalf("lease until %s, want about now+10s", lu)
	}
	b := mustClaim(t, s, claimReq(key, inv, "owner-b", 10*time.Second), idempotency.OutcomeInProgress)
	if b.Record.Owner != "owner-a" || b.Record.LeaseUntil.Sub(a.Record.LeaseUntil).Abs() > 5*time.Millisecond {
		t.Fatalf("in-progress record = owner %s lease %s, want owner-a lease %s", b.Record.Owner, b.Record.LeaseUntil, a.Record.LeaseUntil)
	}
	ta := idempotency.Ticket{Key: key, InvocationID: inv, Owner: "owner-a"}
	tb := idempotency.Ticket{Key: key, InvocationID: inv, Owner: "owner-b"}
	if err := s.Complete(ctx, tb, json.RawMessage(`{"status":"ok"}`), time.Hour); !errors.Is(err, idempotency.ErrNotOwner) {
		t.Fatalf("Complete by a non-owner = %v, want ErrNotOwner", err)
	}
	result := map[string]any{"status": "ok", "refund_id": "r-1", "amount_cents": 1250.0}
	raw, _ := json.Marshal(result)
	if err := s.Complete(ctx, ta, raw, time.Hour); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if err := s.Complete(ctx, ta, raw, time.Hour); err != nil {
		t.Fatalf("second Complete by the same owner = %v, want nil (idempotent)", err)
	}
	c := mustClaim(t, s, claimReq(key, inv, "owner-c", 10*time.Second), idempotency.OutcomeCompleted)
	jsonEqual(t, c.Record.Result, result)
	if c.Record.Owner != "owner-a" || c.Record.ArgsHash != "h-owner-a" || c.Record.State != idempotency.StateCompleted || c.Record.CompletedAt.IsZero() {
		t.Fatalf("completed record = %+v", c.Record)
	}
	if _, err := s.Renew(ctx, ta, time.Second); !errors.Is(err, idempotency.ErrNotOwner) {
		t.Fatalf("Renew of a completed record = %v, want ErrNotOwner", err)
	}
	if err := s.Release(ctx, ta); !errors.Is(err, idempotency.ErrNotOwner) {
		t.Fatalf("Release of a completed record = %v, want ErrNotOwner", err)
	}
	if err := s.Complete(ctx, tb, json.RawMessage(`{"status":"other"}`), time.Hour); !errors.Is(err, idempotency.ErrNotOwner) {
		t.Fatalf("Complete of a completed record by another owner = %v, want ErrNotOwner", err)
	}
	c = mustClaim(t, s, claimReq(key, inv, "owner-d", time.Second), idempotency.OutcomeCompleted)
	jsonEqual(t, c.Record.Result, result)
}

func testRelease(t *testing.T, f Factory) {
	s := f.New(t, 0).Store
	ctx := context.Background()
	key, inv := testKey("refund"), newID("inv")
	mustClaim(t, s, claimReq(key, inv, "owner-a", 10*time.Second), idempotency.OutcomeAcquired)
	ta := idempotency.Ticket{Key: key, InvocationID: inv, Owner: "owner-a"}
	tb := idempotency.Ticket{Key: key, InvocationID: inv, Owner: "owner-b"}
	if err := s.Release(ctx, tb); !errors.Is(err, idempotency.ErrNotOwner) {
		t.Fatalf("Release by a non-owner = %v, want ErrNotOwner", err)
	}
	if err := s.Release(ctx, ta); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := s.Release(ctx, ta); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("second Release = %v, want ErrLeaseLost", err)
	}
	if _, err := s.Renew(ctx, ta, time.Second); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("Renew after release = %v, want ErrLeaseLost", err)
	}
	if err := s.Complete(ctx, ta, json.RawMessage(`{}`), time.Hour); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("Complete after release = %v, want ErrLeaseLost", err)
	}
	if recs, err := s.Effects(ctx, inv); err != nil || len(recs) != 0 {
		t.Fatalf("Effects after release = %+v, %v; want none", recs, err)
	}
	b := mustClaim(t, s, claimReq(key, inv, "owner-b", 10*time.Second), idempotency.OutcomeAcquired)
	if b.Record.Owner != "owner-b" {
		t.Fatalf("owner after release = %s", b.Record.Owner)
	}
}

func testConcurrentClaims(t *testing.T, f Factory) {
	s := f.New(t, 0).Store
	key, inv := testKey("refund"), newID("inv")
	const n = 50
	var wg sync.WaitGroup
	outcomes := make([]idempotency.Outcome, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			c, err := s.Claim(context.Background(), claimReq(key, inv, newID("owner"), 10*time.Second))
			outcomes[i], errs[i] = c.Outcome, err
		})
	}
	wg.Wait()
	acquired := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("claim %d: %v", i, errs[i])
		}
		switch outcomes[i] {
		case idempotency.OutcomeAcquired:
			acquired++
		case idempotency.OutcomeInProgress:
		default:
			t.Fatalf("claim %d outcome %s", i, outcomes[i])
		}
	}
	if acquired != 1 {
		t.Fatalf("%d of %d concurrent claims acquired the key, want exactly 1", acquired, n)
	}
}

func testWrapperConcurrent(t *testing.T, f Factory) {
	s := f.New(t, 0).Store
	inv := newID("inv")
	var refunds atomic.Int64
	tl := newTool("refund", func(ctx context.Context, args map[string]any) (map[string]any, error) {
		time.Sleep(150 * time.Millisecond) // long enough for everyone to pile up
		return tool.OK(map[string]any{"refund_id": "r-" + newID("x"), "n": refunds.Add(1)}), nil
	})
	reg := prometheus.NewRegistry()
	metrics := idempotency.NewMetrics(reg)
	w := idempotency.Wrap(tl, s, wrapOpts(idempotency.Options{Metrics: metrics}))
	const n = 50
	results := make([]map[string]any, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			// Same logical arguments, different key order and number form.
			args := map[string]any{"order_id": "A-1042", "amount_cents": 1250}
			if i%2 == 1 {
				args = map[string]any{"amount_cents": 1250.0, "order_id": "A-1042"}
			}
			results[i], errs[i] = w.Run(ctxFor(t, inv), args)
		})
	}
	close(start)
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		if !reflect.DeepEqual(results[i], results[0]) {
			t.Fatalf("call %d result %v != call 0 result %v", i, results[i], results[0])
		}
	}
	if got := tl.runs.Load(); got != 1 {
		t.Fatalf("tool ran %d times for 50 concurrent calls, want exactly 1", got)
	}
	if got := testutil.ToFloat64(metrics.Replays.WithLabelValues(Agent, "refund")); got != n-1 {
		t.Fatalf("%s = %v, want %d", idempotency.MetricReplays, got, n-1)
	}
}

func testLeaseExpiry(t *testing.T, f Factory) {
	s := f.New(t, 0).Store
	ctx := context.Background()
	key, inv := testKey("refund"), newID("inv")
	a := mustClaim(t, s, claimReq(key, inv, "owner-a", 300*time.Millisecond), idempotency.OutcomeAcquired)
	mustClaim(t, s, claimReq(key, inv, "owner-b", 10*time.Second), idempotency.OutcomeInProgress)
	var b idempotency.Claim
	eventually(t, 10*time.Second, 20*time.Millisecond, func() (bool, string) {
		c, err := s.Claim(ctx, claimReq(key, inv, "owner-b", 10*time.Second))
		if err != nil {
			t.Fatalf("Claim: %v", err)
		}
		b = c
		return c.Outcome != idempotency.OutcomeInProgress, "still in progress by " + c.Record.Owner
	})
	if b.Outcome != idempotency.OutcomeReclaimed || b.Record.Owner != "owner-b" || b.Record.Attempts != 2 {
		t.Fatalf("after lease expiry: outcome %s record %+v, want reclaimed by owner-b, attempts 2", b.Outcome, b.Record)
	}
	if time.Now().Before(a.Record.LeaseUntil.Add(-50 * time.Millisecond)) {
		t.Fatalf("reclaimed before the lease ended (%s)", a.Record.LeaseUntil)
	}
	ta := idempotency.Ticket{Key: key, InvocationID: inv, Owner: "owner-a"}
	tb := idempotency.Ticket{Key: key, InvocationID: inv, Owner: "owner-b"}
	if err := s.Complete(ctx, ta, json.RawMessage(`{"status":"ok","by":"a"}`), time.Hour); !errors.Is(err, idempotency.ErrNotOwner) {
		t.Fatalf("stale owner Complete = %v, want ErrNotOwner", err)
	}
	if _, err := s.Renew(ctx, ta, time.Hour); !errors.Is(err, idempotency.ErrNotOwner) {
		t.Fatalf("stale owner Renew = %v, want ErrNotOwner", err)
	}
	if err := s.Release(ctx, ta); !errors.Is(err, idempotency.ErrNotOwner) {
		t.Fatalf("stale owner Release = %v, want ErrNotOwner", err)
	}
	if err := s.Complete(ctx, tb, json.RawMessage(`{"status":"ok","by":"b"}`), time.Hour); err != nil {
		t.Fatalf("new owner Complete: %v", err)
	}
	if err := s.Complete(ctx, ta, json.RawMessage(`{"status":"ok","by":"a"}`), time.Hour); !errors.Is(err, idempotency.ErrNotOwner) {
		t.Fatalf("stale owner Complete after the new owner completed = %v, want ErrNotOwner", err)
	}
	c := mustClaim(t, s, claimReq(key, inv, "owner-c", time.Second), idempotency.OutcomeCompleted)
	jsonEqual(t, c.Record.Result, map[string]any{"status": "ok", "by": "b"})
}

// testCompletedOutlivesLease: a completed record answers every claim for
// its whole retention, long after the lease of the claim that completed it
// has passed. A backend that checks the lease before the state takes a
// completed key over a lease length later, and every redelivery or replay
// runs the effect again (found in review, twenty-first session).
func testCompletedOutlivesLease(t *testing.T, f Factory) {
	s := f.New(t, 0).Store
	ctx := context.Background()
	key, inv := testKey("refund"), newID("inv")
	mustClaim(t, s, claimReq(key, inv, "owner-a", shortLease), idempotency.OutcomeAcquired)
	result := map[string]any{"status": "ok", "refund_id": newID("r")}
	raw, _ := json.Marshal(result)
	if err := s.Complete(ctx, idempotency.Ticket{Key: key, InvocationID: inv, Owner: "owner-a"}, raw, time.Hour); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	waitLeasesOver(t, s, shortLease)
	for _, owner := range []string{"owner-b", "owner-c"} {
		c := mustClaim(t, s, claimReq(key, inv, owner, shortLease), idempotency.OutcomeCompleted)
		jsonEqual(t, c.Record.Result, result)
		if c.Record.Owner != "owner-a" || c.Record.Attempts != 1 || c.Record.State != idempotency.StateCompleted {
			t.Fatalf("completed record after its lease = %+v, want owner-a's, attempts 1", c.Record)
		}
	}
}

// testWrapperReplaysAfterLease: a wrapped call repeated after the lease
// of the call that ran the tool has passed replays its stored result; the
// tool ran once (found in review, twenty-first session).
func testWrapperReplaysAfterLease(t *testing.T, f Factory) {
	s := f.New(t, 0).Store
	inv := newID("inv")
	tl := newTool("refund", func(ctx context.Context, args map[string]any) (map[string]any, error) {
		return tool.OK(map[string]any{"refund_id": newID("r")}), nil
	})
	w := idempotency.Wrap(tl, s, wrapOpts(idempotency.Options{Lease: shortLease}))
	args := map[string]any{"order_id": "A-1042", "amount_cents": 1250}
	r1, err := w.Run(ctxFor(t, inv), args)
	if err != nil {
		t.Fatal(err)
	}
	waitLeasesOver(t, s, shortLease)
	r2, err := w.Run(ctxFor(t, inv), args)
	if err != nil {
		t.Fatal(err)
	}
	if n := tl.runs.Load(); n != 1 || !reflect.DeepEqual(r1, r2) {
		t.Fatalf("after the lease: runs %d, results %v / %v; want one run and the stored result", n, r1, r2)
	}
}

// testConcurrentReclaims: of many workers that find the same expired lease
// (a crashed owner), exactly one takes it over; the others find it in
// progress under the winner. A takeover that is a read, then a write
// without a revision or owner check lets every one of them run the effect
// (found in review, twenty-first session).
func testConcurrentReclaims(t *testing.T, f Factory) {
	s := f.New(t, 0).Store
	key, inv := testKey("refund"), newID("inv")
	mustClaim(t, s, claimReq(key, inv, "crashed", shortLease), idempotency.OutcomeAcquired)
	waitLeasesOver(t, s, shortLease)
	const n = 50
	claims := make([]idempotency.Claim, n)
	owners := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		owners[i] = newID("owner")
		wg.Go(func() {
			<-start
			claims[i], errs[i] = s.Claim(context.Background(), claimReq(key, inv, owners[i], 10*time.Second))
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("claim %d: %v", i, errs[i])
		}
		switch claims[i].Outcome {
		case idempotency.OutcomeReclaimed:
			if winner >= 0 {
				t.Fatalf("claims %d and %d both reclaimed the expired lease, want exactly 1", winner, i)
			}
			winner = i
		case idempotency.OutcomeInProgress:
		default:
			t.Fatalf("claim %d outcome %s, want reclaimed or in_progress", i, claims[i].Outcome)
		}
	}
	if winner < 0 {
		t.Fatalf("none of %d concurrent claims reclaimed the expired lease, want exactly 1", n)
	}
	if w := claims[winner].Record; w.Owner != owners[winner] || w.Attempts != 2 {
		t.Fatalf("reclaiming record = owner %s attempts %d, want %s, attempts 2", w.Owner, w.Attempts, owners[winner])
	}
	for i := range n {
		if i != winner && claims[i].Record.Owner != owners[winner] {
			t.Fatalf("claim %d found owner %s in progress, want the winner %s", i, claims[i].Record.Owner, owners[winner])
		}
	}
}

// testWrapperConcurrentReclaim: 50 wrapped calls that find the key of a
// crashed worker whose lease has run out run the tool once between them;
// the others wait and replay its result (found in review, twenty-first
// session).
func testWrapperConcurrentReclaim(t *testing.T, f Factory) {
	s := f.New(t, 0).Store
	inv := newID("inv")
	tl := newTool("refund", func(ctx context.Context, args map[string]any) (map[string]any, error) {
		time.Sleep(150 * time.Millisecond) // long enough for everyone to pile up
		return tool.OK(map[string]any{"refund_id": newID("r")}), nil
	})
	w := idempotency.Wrap(tl, s, wrapOpts(idempotency.Options{}))
	args := map[string]any{"order_id": "A-1042", "amount_cents": 1250}
	k, err := idempotency.DeriveKey(idempotency.KeyInput{Agent: Agent, InvocationID: inv, Tool: "refund", Args: args})
	if err != nil {
		t.Fatal(err)
	}
	mustClaim(t, s, claimReq(k.String(), inv, "crashed-worker/1", shortLease), idempotency.OutcomeAcquired)
	waitLeasesOver(t, s, shortLease)
	const n = 50
	results := make([]map[string]any, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			results[i], errs[i] = w.Run(ctxFor(t, inv), args)
		})
	}
	close(start)
	wg.Wait()
	if got := tl.runs.Load(); got != 1 {
		t.Fatalf("tool ran %d times for %d concurrent calls on an expired lease, want exactly 1", got, n)
	}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		if !reflect.DeepEqual(results[i], results[0]) {
			t.Fatalf("call %d result %v != call 0 result %v", i, results[i], results[0])
		}
	}
	recs, err := s.Effects(context.Background(), inv)
	if err != nil || len(recs) != 1 || recs[0].State != idempotency.StateCompleted || recs[0].Attempts != 2 {
		t.Fatalf("Effects = %+v, %v; want one completed record, attempts 2", recs, err)
	}
}

// testLateOwner: an owner whose lease ran out while nobody took it over
// still owns the key (Store.Complete, Store.Renew): it completes, and the
// next claim replays its result rather than running the effect again; or
// it renews and holds the key again (found in review, twenty-first
// session).
func testLateOwner(t *testing.T, f Factory) {
	s := f.New(t, 0).Store
	ctx := context.Background()
	inv := newID("inv")
	done, renewed := testKey("refund"), testKey("provision")
	td := idempotency.Ticket{Key: done, InvocationID: inv, Owner: "owner-a"}
	tr := idempotency.Ticket{Key: renewed, InvocationID: inv, Owner: "owner-a"}
	mustClaim(t, s, claimReq(done, inv, td.Owner, shortLease), idempotency.OutcomeAcquired)
	mustClaim(t, s, claimReq(renewed, inv, tr.Owner, shortLease), idempotency.OutcomeAcquired)
	waitLeasesOver(t, s, shortLease)

	result := map[string]any{"status": "ok", "refund_id": newID("r")}
	raw, _ := json.Marshal(result)
	if err := s.Complete(ctx, td, raw, time.Hour); err != nil {
		t.Fatalf("Complete by the owner after its lease ran out, nobody having taken over = %v, want nil", err)
	}
	c := mustClaim(t, s, claimReq(done, inv, "owner-b", 10*time.Second), idempotency.OutcomeCompleted)
	jsonEqual(t, c.Record.Result, result)
	if c.Record.Owner != td.Owner || c.Record.Attempts != 1 {
		t.Fatalf("late-completed record = %+v, want owner-a's, attempts 1", c.Record)
	}

	until, err := s.Renew(ctx, tr, 20*time.Second)
	if err != nil {
		t.Fatalf("Renew by the owner after its lease ran out, nobody having taken over = %v, want nil", err)
	}
	if until.Before(time.Now().Add(15 * time.Second)) {
		t.Fatalf("Renew returned lease end %s, want about now+20s", until)
	}
	b := mustClaim(t, s, claimReq(renewed, inv, "owner-b", 10*time.Second), idempotency.OutcomeInProgress)
	if b.Record.Owner != tr.Owner || b.Record.LeaseUntil.Sub(until).Abs() > 5*time.Millisecond {
		t.Fatalf("after a late renew: owner %s lease %s, want owner-a lease %s", b.Record.Owner, b.Record.LeaseUntil, until)
	}
}

func testRenew(t *testing.T, f Factory) {
	s := f.New(t, 0).Store
	ctx := context.Background()
	key, inv := testKey("refund"), newID("inv")
	a := mustClaim(t, s, claimReq(key, inv, "owner-a", 400*time.Millisecond), idempotency.OutcomeAcquired)
	until, err := s.Renew(ctx, idempotency.Ticket{Key: key, InvocationID: inv, Owner: "owner-a"}, 20*time.Second)
	if err != nil {
		t.Fatalf("Renew: %v", err)
	}
	if until.Before(time.Now().Add(15 * time.Second)) {
		t.Fatalf("Renew returned lease end %s, want about now+20s", until)
	}
	if _, err := s.Renew(ctx, idempotency.Ticket{Key: key, InvocationID: inv, Owner: "owner-b"}, time.Hour); !errors.Is(err, idempotency.ErrNotOwner) {
		t.Fatalf("Renew by a non-owner = %v, want ErrNotOwner", err)
	}
	// Wait until the original lease has passed; the renewed one must hold.
	time.Sleep(time.Until(a.Record.LeaseUntil.Add(200 * time.Millisecond)))
	b := mustClaim(t, s, claimReq(key, inv, "owner-b", time.Second), idempotency.OutcomeInProgress)
	if b.Record.Owner != "owner-a" || b.Record.LeaseUntil.Sub(until).Abs() > 5*time.Millisecond {
		t.Fatalf("after renew: owner %s lease %s, want owner-a lease %s", b.Record.Owner, b.Record.LeaseUntil, until)
	}
}

// testRefusesBadInput: every backend refuses a renewal with a lease that
// is not positive (it would end a live lease, and the next claim would
// take it over: two owners) and a result that is not JSON (every later
// claim would replay it), and neither changes the record (found in review,
// sixteenth session: the memory and NATS KV stores took both or one).
func testRefusesBadInput(t *testing.T, f Factory) {
	s := f.New(t, 0).Store
	ctx := context.Background()
	key, inv := testKey("refund"), newID("inv")
	mustClaim(t, s, claimReq(key, inv, "owner-a", time.Minute), idempotency.OutcomeAcquired)
	tk := idempotency.Ticket{Key: key, InvocationID: inv, Owner: "owner-a"}
	for _, lease := range []time.Duration{0, -time.Second} {
		if _, err := s.Renew(ctx, tk, lease); err == nil {
			t.Fatalf("Renew(lease %v) = nil, want an error", lease)
		}
	}
	b := mustClaim(t, s, claimReq(key, inv, "owner-b", time.Minute), idempotency.OutcomeInProgress)
	if b.Record.Owner != "owner-a" {
		t.Fatalf("after refused renewals the key is %s's, want owner-a's", b.Record.Owner)
	}
	if err := s.Complete(ctx, tk, json.RawMessage(`{"refund_id":`), time.Hour); err == nil {
		t.Fatal("Complete with a result that is not JSON = nil, want an error")
	}
	mustClaim(t, s, claimReq(key, inv, "owner-b", time.Minute), idempotency.OutcomeInProgress)
}

func testWrapperRenews(t *testing.T, f Factory) {
	s := f.New(t, 0).Store
	inv := newID("inv")
	release := make(chan struct{})
	started := make(chan string, 1)
	tl := newTool("provision", func(ctx context.Context, args map[string]any) (map[string]any, error) {
		k, _ := idempotency.KeyFromContext(ctx)
		started <- k
		select {
		case <-release:
			return tool.OK(map[string]any{"vm": "vm-1"}), nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	})
	// A short lease renewed often: renewals may stall up to ~700ms (a loaded
	// CI machine) before an intruder could take over.
	const lease = 800 * time.Millisecond
	w := idempotency.Wrap(tl, s, idempotency.Options{Lease: lease, RenewInterval: lease / 10, WaitTimeout: -1})
	done := make(chan error, 1)
	var res map[string]any
	go func() {
		var err error
		res, err = w.Run(ctxFor(t, inv), map[string]any{"size": "small"})
		done <- err
	}()
	key := <-started
	// For three lease lengths, nobody else may take the key over.
	deadline := time.Now().Add(3 * lease)
	polls := 0
	for time.Now().Before(deadline) {
		c, err := s.Claim(context.Background(), claimReq(key, inv, newID("intruder"), time.Second))
		if err != nil {
			t.Fatalf("Claim: %v", err)
		}
		if c.Outcome != idempotency.OutcomeInProgress {
			t.Fatalf("while the tool runs, another claim got %s: the lease was not renewed", c.Outcome)
		}
		polls++
		time.Sleep(30 * time.Millisecond)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("wrapped run: %v", err)
	}
	if res["vm"] != "vm-1" || tl.runs.Load() != 1 || polls < 5 {
		t.Fatalf("result %v, runs %d, polls %d", res, tl.runs.Load(), polls)
	}
	c := mustClaim(t, s, claimReq(key, inv, "later", time.Second), idempotency.OutcomeCompleted)
	if c.Record.Attempts != 1 {
		t.Fatalf("attempts = %d, want 1", c.Record.Attempts)
	}
}

func testWrapperRelease(t *testing.T, f Factory) {
	s := f.New(t, 0).Store
	inv := newID("inv")
	var answer atomic.Value
	tl := newTool("charge", func(ctx context.Context, args map[string]any) (map[string]any, error) {
		switch answer.Load().(string) {
		case "retryable":
			return tool.Error(tool.ReasonTimeout, true, "payment service slow"), nil
		case "goerror":
			return nil, fmt.Errorf("connection refused before sending: %w", idempotency.ErrNotApplied)
		case "final-error":
			return tool.Error("card_declined", false, "ask for another card"), nil
		}
		return tool.OK(nil), nil
	})
	w := idempotency.Wrap(tl, s, wrapOpts(idempotency.Options{}))
	args := map[string]any{"amount_cents": 500}
	run := func() (map[string]any, error) { return w.Run(ctxFor(t, inv), args) }

	answer.Store("retryable")
	res, err := run()
	if err != nil || !tool.IsRetryable(res) {
		t.Fatalf("retryable call = %v, %v", res, err)
	}
	answer.Store("goerror")
	if _, err := run(); !errors.Is(err, idempotency.ErrNotApplied) {
		t.Fatalf("not-applied error call error = %v, want the tool's error unchanged", err)
	}
	if tl.runs.Load() != 2 {
		t.Fatalf("runs = %d, want 2 (a retryable result released the claim)", tl.runs.Load())
	}
	answer.Store("final-error")
	res, err = run()
	if err != nil || res["reason"] != "card_declined" {
		t.Fatalf("final error call = %v, %v", res, err)
	}
	answer.Store("ok")
	res2, err := run()
	if err != nil || !reflect.DeepEqual(res, res2) {
		t.Fatalf("after a final error map the call replays it: got %v, %v; want %v", res2, err, res)
	}
	if tl.runs.Load() != 3 {
		t.Fatalf("runs = %d, want 3 (ErrNotApplied released the claim, a final error map is stored)", tl.runs.Load())
	}
	recs, err := s.Effects(context.Background(), inv)
	if err != nil || len(recs) != 1 || recs[0].State != idempotency.StateCompleted {
		t.Fatalf("Effects = %+v, %v; want one completed record", recs, err)
	}
	jsonEqual(t, recs[0].Result, tool.Error("card_declined", false, "ask for another card"))
}

func testWrapperInProgress(t *testing.T, f Factory) {
	s := f.New(t, 0).Store
	inv := newID("inv")
	tl := newTool("refund", func(ctx context.Context, args map[string]any) (map[string]any, error) {
		return tool.OK(nil), nil
	})
	w := idempotency.Wrap(tl, s, idempotency.Options{WaitTimeout: 300 * time.Millisecond})
	args := map[string]any{"order_id": "A-1"}
	k, err := idempotency.DeriveKey(idempotency.KeyInput{Agent: Agent, InvocationID: inv, Tool: "refund", Args: args})
	if err != nil {
		t.Fatal(err)
	}
	held := mustClaim(t, s, claimReq(k.String(), inv, "other-worker/1", 30*time.Second), idempotency.OutcomeAcquired)
	start := time.Now()
	_, err = w.Run(ctxFor(t, inv), args)
	var ipe *idempotency.InProgressError
	if !errors.As(err, &ipe) || !errors.Is(err, idempotency.ErrInProgress) {
		t.Fatalf("Run while another owner holds the key = %v, want *InProgressError", err)
	}
	if ipe.Owner != "other-worker/1" || ipe.Key != k.String() || ipe.LeaseUntil.Sub(held.Record.LeaseUntil).Abs() > 5*time.Millisecond || !ipe.Retryable() {
		t.Fatalf("InProgressError = %+v", ipe)
	}
	if el := time.Since(start); el < 250*time.Millisecond || el > 5*time.Second {
		t.Fatalf("waited %s, want about the 300ms WaitTimeout", el)
	}
	if tl.runs.Load() != 0 {
		t.Fatal("the tool ran while another owner held the key")
	}
}

func testKeyFields(t *testing.T, f Factory) {
	s := f.New(t, 0).Store
	inv := newID("inv")
	var seen []string
	var mu sync.Mutex
	tl := newTool("refund", func(ctx context.Context, args map[string]any) (map[string]any, error) {
		k, ok := idempotency.KeyFromContext(ctx)
		if !ok {
			return nil, errors.New("no key in context")
		}
		mu.Lock()
		seen = append(seen, k)
		mu.Unlock()
		return tool.OK(map[string]any{"refund_id": "r-1"}), nil
	})
	reg := prometheus.NewRegistry()
	m := idempotency.NewMetrics(reg)
	w := idempotency.Wrap(tl, s, wrapOpts(idempotency.Options{KeyFields: []string{"order_id", "amount_cents"}, Metrics: m}))
	r1, err := w.Run(ctxFor(t, inv), map[string]any{"order_id": "A-1042", "amount_cents": 1250, "reason": "damaged in transit"})
	if err != nil {
		t.Fatal(err)
	}
	// The model rephrases the reason on a retry: same refund, no second run.
	r2, err := w.Run(ctxFor(t, inv), map[string]any{"reason": "The item arrived damaged.", "amount_cents": 1250.0, "order_id": "A-1042"})
	if err != nil {
		t.Fatal(err)
	}
	if tl.runs.Load() != 1 || !reflect.DeepEqual(r1, r2) {
		t.Fatalf("runs %d, results %v / %v: a rephrased reason must replay", tl.runs.Load(), r1, r2)
	}
	if got := testutil.ToFloat64(m.ArgsMismatch.WithLabelValues(Agent, "refund")); got != 1 {
		t.Fatalf("%s = %v, want 1", idempotency.MetricArgsMismatch, got)
	}
	// A different amount is a different refund.
	if _, err := w.Run(ctxFor(t, inv), map[string]any{"order_id": "A-1042", "amount_cents": 999, "reason": "partial"}); err != nil {
		t.Fatal(err)
	}
	if tl.runs.Load() != 2 {
		t.Fatalf("runs %d, want 2 for a different amount", tl.runs.Load())
	}
	_, err = w.Run(ctxFor(t, inv), map[string]any{"order_id": "A-1042", "reason": "no amount"})
	var kfe *idempotency.KeyFieldError
	if !errors.As(err, &kfe) || kfe.Field != "amount_cents" || !errors.Is(err, idempotency.ErrMissingKeyField) || !errors.Is(err, tool.ErrInvalidArguments) {
		t.Fatalf("missing key field error = %v, want *KeyFieldError for amount_cents", err)
	}
	if tl.runs.Load() != 2 {
		t.Fatal("the tool ran without its key field")
	}
	recs, err := s.Effects(context.Background(), inv)
	if err != nil || len(recs) != 2 {
		t.Fatalf("Effects = %+v, %v; want 2", recs, err)
	}
	for i, k := range seen {
		if !strings.HasPrefix(k, "idem:"+Agent+":refund:") || len(k) != len("idem:"+Agent+":refund:")+64 {
			t.Fatalf("key in context %q, want idem:%s:refund:<64 hex>", k, Agent)
		}
		if recs[0].Key != k && recs[1].Key != k {
			t.Fatalf("key %d in context %q is not among the stored keys %q, %q", i, k, recs[0].Key, recs[1].Key)
		}
	}
	if _, err := w.Run(context.Background(), map[string]any{"order_id": "A", "amount_cents": 1}); !errors.Is(err, idempotency.ErrNoInvocationID) {
		t.Fatalf("Run without a tool context = %v, want ErrNoInvocationID", err)
	}
}

func testEffects(t *testing.T, f Factory) {
	s := f.New(t, 0).Store
	ctx := context.Background()
	inv1, inv2 := newID("inv1"), newID("inv2")
	mk := func(name string) *countingTool {
		return newTool(name, func(ctx context.Context, args map[string]any) (map[string]any, error) {
			return tool.OK(map[string]any{"tool": name, "args": args}), nil
		})
	}
	lookup, refund := mk("lookup_order"), mk("refund")
	wl := idempotency.Wrap(lookup, s, wrapOpts(idempotency.Options{}))
	wr := idempotency.Wrap(refund, s, wrapOpts(idempotency.Options{}))
	if _, err := wl.Run(ctxFor(t, inv1), map[string]any{"order_id": "A-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := wr.Run(ctxFor(t, inv1), map[string]any{"order_id": "A-1", "amount_cents": 100}); err != nil {
		t.Fatal(err)
	}
	if _, err := wr.Run(ctxFor(t, inv2), map[string]any{"order_id": "B-2", "amount_cents": 200}); err != nil {
		t.Fatal(err)
	}
	pending := testKey("email")
	mustClaim(t, s, claimReq(pending, inv1, "owner-p", 30*time.Second), idempotency.OutcomeAcquired)
	released := testKey("sms")
	mustClaim(t, s, claimReq(released, inv1, "owner-r", 30*time.Second), idempotency.OutcomeAcquired)
	if err := s.Release(ctx, idempotency.Ticket{Key: released, InvocationID: inv1, Owner: "owner-r"}); err != nil {
		t.Fatal(err)
	}

	recs, err := s.Effects(ctx, inv1)
	if err != nil {
		t.Fatalf("Effects: %v", err)
	}
	byTool := map[string]idempotency.Record{}
	for _, r := range recs {
		if r.InvocationID != inv1 {
			t.Fatalf("Effects(%s) listed a record of %s", inv1, r.InvocationID)
		}
		byTool[r.Tool] = r
	}
	if len(recs) != 3 || len(byTool) != 3 {
		t.Fatalf("Effects(%s) = %d records %v, want lookup_order, refund (completed) and the pending claim", inv1, len(recs), recs)
	}
	for _, name := range []string{"lookup_order", "refund"} {
		r := byTool[name]
		if r.State != idempotency.StateCompleted || r.Agent != Agent || !bytes.Contains(r.Result, []byte(`"tool":"`+name+`"`)) || r.CompletedAt.IsZero() || r.CreatedAt.IsZero() {
			t.Fatalf("record of %s = %+v", name, r)
		}
	}
	if p := byTool["refund"]; p.Key == pending {
		t.Fatal("keys mixed up")
	}
	var p idempotency.Record
	for _, r := range recs {
		if r.Key == pending {
			p = r
		}
	}
	if p.State != idempotency.StateInProgress || p.Owner != "owner-p" || p.LeaseUntil.Before(time.Now()) {
		t.Fatalf("pending record = %+v", p)
	}
	for i := 1; i < len(recs); i++ {
		if recs[i].CreatedAt.Before(recs[i-1].CreatedAt) {
			t.Fatalf("Effects not oldest first: %v", recs)
		}
	}
	recs2, err := s.Effects(ctx, inv2)
	if err != nil || len(recs2) != 1 || recs2[0].Tool != "refund" {
		t.Fatalf("Effects(%s) = %+v, %v; want its one refund", inv2, recs2, err)
	}
	none, err := s.Effects(ctx, newID("unknown"))
	if err != nil || len(none) != 0 {
		t.Fatalf("Effects(unknown) = %+v, %v; want none", none, err)
	}
}

func testReopen(t *testing.T, f Factory) {
	inst := f.New(t, 0)
	if inst.Reopen == nil {
		t.Skip("backend is not durable (no Reopen)")
	}
	inv := newID("inv")
	tl := newTool("refund", func(ctx context.Context, args map[string]any) (map[string]any, error) {
		return tool.OK(map[string]any{"refund_id": "r-9"}), nil
	})
	r1, err := idempotency.Wrap(tl, inst.Store, wrapOpts(idempotency.Options{})).Run(ctxFor(t, inv), map[string]any{"order_id": "A-9"})
	if err != nil {
		t.Fatal(err)
	}
	pending, pinv := testKey("email"), newID("inv")
	mustClaim(t, inst.Store, claimReq(pending, pinv, "owner-p", 30*time.Second), idempotency.OutcomeAcquired)

	s2 := inst.Reopen(t)
	r2, err := idempotency.Wrap(tl, s2, wrapOpts(idempotency.Options{})).Run(ctxFor(t, inv), map[string]any{"order_id": "A-9"})
	if err != nil {
		t.Fatal(err)
	}
	if tl.runs.Load() != 1 || !reflect.DeepEqual(r1, r2) {
		t.Fatalf("after reopen: runs %d, results %v / %v; want the stored result", tl.runs.Load(), r1, r2)
	}
	c := mustClaim(t, s2, claimReq(pending, pinv, "owner-q", time.Second), idempotency.OutcomeInProgress)
	if c.Record.Owner != "owner-p" {
		t.Fatalf("in-progress owner after reopen = %s", c.Record.Owner)
	}
	if recs, err := s2.Effects(context.Background(), inv); err != nil || len(recs) != 1 {
		t.Fatalf("Effects after reopen = %+v, %v", recs, err)
	}
}

func testRetention(t *testing.T, f Factory) {
	ret := f.MinRetention
	s := f.New(t, ret).Store
	ctx := context.Background()
	key, inv := testKey("refund"), newID("inv")
	mustClaim(t, s, claimReq(key, inv, "owner-a", 30*time.Second), idempotency.OutcomeAcquired)
	if err := s.Complete(ctx, idempotency.Ticket{Key: key, InvocationID: inv, Owner: "owner-a"}, json.RawMessage(`{"status":"ok"}`), ret); err != nil {
		t.Fatal(err)
	}
	completed := time.Now()
	// Poll with Effects (read-only) until the record is gone, then a claim
	// must find the key new.
	eventually(t, f.ExpiryTimeout, 50*time.Millisecond, func() (bool, string) {
		recs, err := s.Effects(ctx, inv)
		if err != nil {
			t.Fatalf("Effects: %v", err)
		}
		return len(recs) == 0, "completed record still listed"
	})
	if el := time.Since(completed); el < ret-100*time.Millisecond {
		t.Fatalf("record expired after %s, before its retention %s", el, ret)
	}
	mustClaim(t, s, claimReq(key, inv, "owner-b", 30*time.Second), idempotency.OutcomeAcquired)
}

func testUnreachable(t *testing.T, f Factory) {
	if f.Unreachable == nil {
		t.Skip("backend cannot be unreachable")
	}
	s := f.Unreachable(t)
	inv := newID("inv")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := s.Claim(ctx, claimReq(testKey("refund"), inv, "owner-a", time.Second))
	var se *idempotency.StoreError
	if !errors.Is(err, idempotency.ErrStoreUnavailable) || !errors.As(err, &se) || se.Op != "claim" {
		t.Fatalf("Claim on an unreachable store = %v, want *StoreError (ErrStoreUnavailable)", err)
	}
	if _, err := s.Effects(ctx, inv); !errors.Is(err, idempotency.ErrStoreUnavailable) {
		t.Fatalf("Effects on an unreachable store = %v, want ErrStoreUnavailable", err)
	}
	tl := newTool("refund", func(ctx context.Context, args map[string]any) (map[string]any, error) {
		return tool.OK(nil), nil
	})
	reg := prometheus.NewRegistry()
	m := idempotency.NewMetrics(reg)
	w := idempotency.Wrap(tl, s, idempotency.Options{StoreTimeout: 3 * time.Second, Metrics: m})
	start := time.Now()
	_, err = w.Run(ctxFor(t, inv), map[string]any{"order_id": "A-1"})
	if !errors.Is(err, idempotency.ErrStoreUnavailable) || !errors.As(err, &se) {
		t.Fatalf("wrapped Run on an unreachable store = %v, want ErrStoreUnavailable", err)
	}
	if tl.runs.Load() != 0 {
		t.Fatal("the tool ran although the store is unreachable (must fail closed)")
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("failing took %s", el)
	}
	if got := testutil.ToFloat64(m.StoreErrors.WithLabelValues(Agent, "refund", "claim")); got != 1 {
		t.Fatalf("%s{op=claim} = %v, want 1", idempotency.MetricStoreErrors, got)
	}
}

// testWrapperUnknownOutcome: a tool that fails with an error that does not
// say the effect was not applied (it may have acted, then lost the reply),
// or panics, leaves its outcome unknown. The wrapper stores that, so a
// retry, a redelivery or a replay answers from the record and never runs
// the effect a second time.
func testWrapperUnknownOutcome(t *testing.T, f Factory) {
	s := f.New(t, 0).Store
	for _, tc := range []struct {
		name string
		fail func() (map[string]any, error)
	}{
		{"error", func() (map[string]any, error) { return nil, fmt.Errorf("read reply: %w", context.DeadlineExceeded) }},
		{"panic", func() (map[string]any, error) { panic("bug after the effect") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv := newID("inv")
			var effects atomic.Int64
			tl := newTool("charge", func(ctx context.Context, args map[string]any) (map[string]any, error) {
				if effects.Add(1) == 1 { // the effect happens, then the tool fails
					return tc.fail()
				}
				return tool.OK(nil), nil
			})
			w := idempotency.Wrap(tl, s, wrapOpts(idempotency.Options{}))
			args := map[string]any{"amount_cents": 500}
			func() {
				defer func() { _ = recover() }()
				if _, err := w.Run(ctxFor(t, inv), args); err == nil {
					t.Fatal("the failing call returned no error")
				}
			}()
			res, err := w.Run(ctxFor(t, inv), args)
			if err != nil || res["reason"] != "outcome_unknown" || tool.IsRetryable(res) {
				t.Fatalf("the second call = %v, %v; want the stored outcome_unknown error map", res, err)
			}
			if n := effects.Load(); n != 1 {
				t.Fatalf("the effect ran %d times, want once", n)
			}
			recs, err := s.Effects(context.Background(), inv)
			if err != nil || len(recs) != 1 || recs[0].State != idempotency.StateCompleted {
				t.Fatalf("Effects = %+v, %v; want one completed record", recs, err)
			}
		})
	}
}

// testWrapperResultTooLarge: a tool that did its effect and returned a
// result larger than the backend can hold in one record (NATS KV's 1 MiB
// max_payload) must still complete its key: a claim left in progress would
// be taken over when its lease ends and the effect run again. A store that
// holds the result replays it; one that cannot answers result_not_recorded.
// The lease is short so that a key left in progress would be reclaimed
// within the second call's wait.
func testWrapperResultTooLarge(t *testing.T, f Factory) {
	s := f.New(t, 0).Store
	inv := newID("inv")
	big := strings.Repeat("x", 1100*1024)
	var effects atomic.Int64
	tl := newTool("make_report", func(ctx context.Context, args map[string]any) (map[string]any, error) {
		effects.Add(1)
		return tool.OK(map[string]any{"document": big}), nil
	})
	w := idempotency.Wrap(tl, s, wrapOpts(idempotency.Options{Lease: 300 * time.Millisecond, StoreTimeout: time.Second, WaitTimeout: 3 * time.Second}))
	args := map[string]any{"title": "monthly"}
	res, err := w.Run(ctxFor(t, inv), args)
	if err != nil || res["document"] != big {
		t.Fatalf("the first call = %d-key map, %v; want the tool's result", len(res), err)
	}
	res, err = w.Run(ctxFor(t, inv), args)
	if n := effects.Load(); n != 1 {
		t.Fatalf("the effect ran %d times for one call, want once (second call: %v)", n, err)
	}
	if err != nil || (res["document"] != big && res["reason"] != "result_not_recorded") {
		t.Fatalf("the second call = %v, %v; want the stored result or the result_not_recorded error map", res["reason"], err)
	}
	recs, err := s.Effects(context.Background(), inv)
	if err != nil || len(recs) != 1 || recs[0].State != idempotency.StateCompleted {
		t.Fatalf("Effects = %d record(s), %v; want one completed record", len(recs), err)
	}
}
