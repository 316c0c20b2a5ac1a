package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// Regression (found in review of this session's fix, twenty-fifth
// session): a claim resent after its reply was lost finds the key in
// progress with the call's own token, and the wrapper now takes that as
// OutcomeAcquired, always. When the first send took over an expired lease
// (OutcomeReclaimed: "the previous owner may have run the tool"), the
// resend's answer is still that takeover (the record's Attempts is 2), but
// agentfleet_idempotency_claims_total counts it as acquired: the Grafana
// panel's "reclaimed (lease expired)" series, the on-call signal that an
// effect may have run twice, misses exactly the takeovers made during a
// Redis blip. Right: an own in-progress answer whose record has
// Attempts > 1 is OutcomeReclaimed (wrapper.go, the own-token branch of
// call.claim).
func TestResentClaimAfterATakeoverCountsAsReclaimed(t *testing.T) {
	mem := idempotency.NewMemory()
	inv, args := "inv-review8d-reclaim", map[string]any{"order_id": "o-1"}
	// A worker that crashed while it held the key: its lease has ended.
	var crashedKey string
	crashed := &fnTool{name: "refund", fn: func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		crashedKey, _ = idempotency.KeyFromContext(ctx)
		return nil, idempotency.ErrNotApplied // released below: re-claimed by hand
	}}
	if _, err := idempotency.Wrap(crashed, mem, idempotency.Options{}).Run(toolCtx(inv), args); err == nil {
		t.Fatal("want ErrNotApplied")
	}
	c, err := mem.Claim(context.Background(), idempotency.ClaimRequest{
		Ticket: idempotency.Ticket{Key: crashedKey, InvocationID: inv, Owner: "crashed/1"},
		Agent:  "support", Tool: "refund", ArgsHash: "h", Lease: time.Nanosecond,
	})
	if err != nil || c.Outcome != idempotency.OutcomeAcquired {
		t.Fatalf("crashed owner's claim: %+v, %v", c, err)
	}
	for !time.Now().After(c.Record.LeaseUntil) { // the lease has ended (no sleep: the clock passes one nanosecond)
	}

	reg := prometheus.NewRegistry()
	metrics := idempotency.NewMetrics(reg)
	runs := 0
	refund := &fnTool{name: "refund", fn: func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		runs++
		return tool.OK(map[string]any{"refund_id": "r-1"}), nil
	}}
	a := idempotency.Wrap(refund, resendingStore{mem}, idempotency.Options{Lease: 5 * time.Second, WaitTimeout: 200 * time.Millisecond, Metrics: metrics})
	if _, err := a.Run(toolCtx(inv), args); err != nil || runs != 1 {
		t.Fatalf("run after the takeover: runs %d, %v", runs, err)
	}
	effects, _ := mem.Effects(context.Background(), inv)
	if len(effects) != 1 || effects[0].Attempts != 2 {
		t.Fatalf("effects %+v; want one record of two owners", effects)
	}
	reclaimed := testutil.ToFloat64(metrics.Claims.WithLabelValues("support", "refund", string(idempotency.OutcomeReclaimed)))
	acquired := testutil.ToFloat64(metrics.Claims.WithLabelValues("support", "refund", string(idempotency.OutcomeAcquired)))
	if reclaimed != 1 || acquired != 0 {
		t.Fatalf("claims counted: reclaimed %v, acquired %v; want the takeover of the crashed owner's lease counted as reclaimed", reclaimed, acquired)
	}
}
