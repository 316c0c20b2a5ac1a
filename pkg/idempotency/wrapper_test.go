package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

type fnTool struct {
	name string
	runs atomic.Int64
	fn   func(ctx context.Context, args map[string]any) (map[string]any, error)
}

func (f *fnTool) Name() string                        { return f.name }
func (f *fnTool) Description() string                 { return "test" }
func (f *fnTool) Declaration() *model.ToolDeclaration { return &model.ToolDeclaration{Name: f.name} }
func (f *fnTool) Run(ctx context.Context, args map[string]any) (map[string]any, error) {
	f.runs.Add(1)
	return f.fn(ctx, args)
}

func toolCtx(inv string) context.Context {
	return tool.WithContext(context.Background(), &tool.Context{InvocationID: inv, Session: session.Key{App: "support", UserID: "u", SessionID: "s"}})
}

// renewSignal is a store that reports each successful Renew on renewed.
type renewSignal struct {
	idempotency.Store
	renewed chan struct{}
}

func (r renewSignal) Renew(ctx context.Context, tk idempotency.Ticket, lease time.Duration) (time.Time, error) {
	until, err := r.Store.Renew(ctx, tk, lease)
	if err == nil {
		select {
		case r.renewed <- struct{}{}:
		default:
		}
	}
	return until, err
}

// TestRenewGoroutineStops: the renewal goroutine renews the lease while the
// tool runs (the tool returns once it has seen three renewals) and is gone
// when Run returns. The tool waits for the renewals, not for a time: with a
// 100ms lease and a 300ms sleep, a renewal goroutine not scheduled for 90ms
// (a loaded machine) let the lease run out and the tool was cancelled.
func TestRenewGoroutineStops(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := renewSignal{Store: idempotency.NewMemory(), renewed: make(chan struct{}, 1)}
	tl := &fnTool{name: "provision", fn: func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		for range 3 {
			select {
			case <-s.renewed:
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}
		return tool.OK(nil), nil
	}}
	w := idempotency.Wrap(tl, s, idempotency.Options{Lease: 2 * time.Second, RenewInterval: 20 * time.Millisecond})
	if _, err := w.Run(toolCtx("inv-1"), nil); err != nil {
		t.Fatal(err)
	}
	recs, _ := s.Effects(context.Background(), "inv-1")
	if len(recs) != 1 || recs[0].State != idempotency.StateCompleted || recs[0].Attempts != 1 {
		t.Fatalf("records %+v", recs)
	}
}

// TestLeaseLostCancelsTool: when another owner takes the key over while the
// tool runs, the renewer cancels the tool's context with the claim loss and the
// stale owner cannot touch the new owner's record.
func TestLeaseLostCancelsTool(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := idempotency.NewMemory()
	started := make(chan string, 1)
	var cause atomic.Value
	tl := &fnTool{name: "provision", fn: func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		k, _ := idempotency.KeyFromContext(ctx)
		started <- k
		<-ctx.Done()
		cause.Store(context.Cause(ctx))
		return nil, context.Cause(ctx)
	}}
	reg := prometheus.NewRegistry()
	m := idempotency.NewMetrics(reg)
	w := idempotency.Wrap(tl, s, idempotency.Options{Lease: time.Second, RenewInterval: 20 * time.Millisecond, Metrics: m})
	done := make(chan error, 1)
	go func() { _, err := w.Run(toolCtx("inv-1"), map[string]any{"size": 1}); done <- err }()
	key := <-started
	recs, _ := s.Effects(context.Background(), "inv-1")
	if len(recs) != 1 {
		t.Fatalf("records %+v", recs)
	}
	// Simulate a takeover: the owner's claim goes away, an intruder claims.
	old := idempotency.Ticket{Key: key, InvocationID: "inv-1", Owner: recs[0].Owner}
	if err := s.Release(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(context.Background(), idempotency.ClaimRequest{Ticket: idempotency.Ticket{Key: key, InvocationID: "inv-1", Owner: "intruder"}, Lease: time.Minute}); err != nil {
		t.Fatal(err)
	}
	err := <-done
	// Between the release and the intruder's claim a renewal may see no
	// record (ErrLeaseLost); after it, another owner (ErrNotOwner).
	if !idempotency.IsOwnershipError(err) {
		t.Fatalf("Run = %v, want the tool's ErrNotOwner / ErrLeaseLost cause", err)
	}
	if c, _ := cause.Load().(error); !idempotency.IsOwnershipError(c) {
		t.Fatalf("tool context cause = %v", c)
	}
	recs, _ = s.Effects(context.Background(), "inv-1")
	if len(recs) != 1 || recs[0].Owner != "intruder" || recs[0].State != idempotency.StateInProgress {
		t.Fatalf("the stale owner touched the new owner's record: %+v", recs)
	}
	if got := testutil.ToFloat64(m.LeaseLost.WithLabelValues("support", "provision")); got < 1 {
		t.Fatalf("%s = %v", idempotency.MetricLeaseLost, got)
	}
}

// A panic may come after the effect: the claim is completed with an
// unknown outcome, so the call does not run again.
func TestPanicStoresAnUnknownOutcome(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := idempotency.NewMemory()
	var boom atomic.Bool
	boom.Store(true)
	tl := &fnTool{name: "charge", fn: func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		if boom.Load() {
			panic("bug")
		}
		return tool.OK(nil), nil
	}}
	w := idempotency.Wrap(tl, s, idempotency.Options{})
	func() {
		defer func() {
			if recover() != "bug" {
				t.Fatal("panic not propagated")
			}
		}()
		_, _ = w.Run(toolCtx("inv-1"), nil)
	}()
	boom.Store(false)
	res, err := w.Run(toolCtx("inv-1"), nil)
	if err != nil || res["reason"] != "outcome_unknown" {
		t.Fatalf("after a panic the call answers %v, %v; want the stored outcome_unknown", res, err)
	}
	if tl.runs.Load() != 1 {
		t.Fatalf("runs %d, want 1", tl.runs.Load())
	}
}

func TestUnencodableResultIsRecordedAsFinal(t *testing.T) {
	s := idempotency.NewMemory()
	tl := &fnTool{name: "charge", fn: func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		return map[string]any{"status": "ok", "x": math.NaN()}, nil
	}}
	w := idempotency.Wrap(tl, s, idempotency.Options{})
	if _, err := w.Run(toolCtx("inv-1"), nil); err == nil {
		t.Fatal("want an encoding error")
	}
	res, err := w.Run(toolCtx("inv-1"), nil)
	if err != nil || res["reason"] != "result_not_recorded" || tl.runs.Load() != 1 {
		t.Fatalf("second call = %v, %v, runs %d; the effect must not run again", res, err, tl.runs.Load())
	}
}

func TestStoreErrorFailsClosed(t *testing.T) {
	s := idempotency.NewMemory()
	tl := &fnTool{name: "charge", fn: func(ctx context.Context, _ map[string]any) (map[string]any, error) { return tool.OK(nil), nil }}
	w := idempotency.Wrap(tl, s, idempotency.Options{})
	ctx, cancel := context.WithCancel(toolCtx("inv-1"))
	cancel()
	_, err := w.Run(ctx, nil)
	var se *idempotency.StoreError
	if !errors.As(err, &se) || !errors.Is(err, idempotency.ErrStoreUnavailable) || !errors.Is(err, context.Canceled) || tl.runs.Load() != 0 {
		t.Fatalf("Run with a failing store = %v, runs %d", err, tl.runs.Load())
	}
}

func TestAgentFromSessionAndMissingInvocation(t *testing.T) {
	s := idempotency.NewMemory()
	var key string
	tl := &fnTool{name: "charge", fn: func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		key, _ = idempotency.KeyFromContext(ctx)
		return tool.OK(nil), nil
	}}
	if _, err := idempotency.Wrap(tl, s, idempotency.Options{}).Run(toolCtx("inv-1"), nil); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(key, "idem:support:charge:") {
		t.Fatalf("key %q, want the session app as agent", key)
	}
	if _, err := idempotency.Wrap(tl, s, idempotency.Options{Agent: "billing"}).Run(toolCtx("inv-1"), nil); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(key, "idem:billing:charge:") {
		t.Fatalf("key %q, want Options.Agent", key)
	}
	_, err := idempotency.Wrap(tl, s, idempotency.Options{}).Run(tool.WithContext(context.Background(), &tool.Context{}), nil)
	if !errors.Is(err, idempotency.ErrNoInvocationID) {
		t.Fatalf("empty invocation id: %v", err)
	}
	if _, ok := idempotency.KeyFromContext(context.Background()); ok {
		t.Fatal("KeyFromContext outside a wrapped call")
	}
}

func TestOptions(t *testing.T) {
	o := idempotency.Options{}.WithDefaults()
	if o.Lease != idempotency.DefaultLease || o.RenewInterval != idempotency.DefaultLease/3 || o.Retention != idempotency.DefaultRetention ||
		o.WaitTimeout != idempotency.DefaultWaitTimeout || o.KeyPrefix != "idem" || o.Owner == "" {
		t.Fatalf("defaults %+v", o)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	bad := []idempotency.Options{
		{Agent: "a:b"},
		{Lease: time.Second, RenewInterval: 2 * time.Second},
		// Renewals due after the cancel (a second less the 100 ms margin):
		// a tool longer than 900 ms would be cancelled unrenewed.
		{Lease: time.Second, RenewInterval: 950 * time.Millisecond},
		{Retention: idempotency.DefaultDLQMaxAge},
		{WaitTimeout: time.Hour},
		{KeyFields: []string{""}},
	}
	for _, b := range bad {
		if err := b.WithDefaults().Validate(); err == nil {
			t.Errorf("%+v accepted", b)
		}
	}
	if _, err := idempotency.NewTool(&fnTool{name: "t"}, idempotency.NewMemory(), bad[0]); err == nil {
		t.Error("NewTool accepted invalid options")
	}
	defer func() {
		if recover() == nil {
			t.Error("Wrap did not panic on invalid options")
		}
	}()
	idempotency.Wrap(&fnTool{name: "t"}, idempotency.NewMemory(), bad[0])
}

func TestValidateRetention(t *testing.T) {
	day := 24 * time.Hour
	cases := []struct {
		ret, dlq time.Duration
		ok       bool
	}{
		{idempotency.DefaultRetention, idempotency.DefaultDLQMaxAge, true},
		{15 * day, 14 * day, true},
		{14 * day, 14 * day, false}, // equal is not enough
		{14*day + time.Hour, 14 * day, false},
		{30 * day, 0, false}, // DLQ keeps entries forever
		{0, day, false},
		{2 * day, day, true},
	}
	for _, c := range cases {
		err := idempotency.ValidateRetention(c.ret, c.dlq)
		if (err == nil) != c.ok {
			t.Errorf("ValidateRetention(%s, %s) = %v, want ok=%v", c.ret, c.dlq, err, c.ok)
		}
	}
	err := idempotency.ValidateRetention(14*day, 14*day)
	if err == nil || !strings.Contains(err.Error(), "dead-letter") || !strings.Contains(err.Error(), "replay") {
		t.Errorf("message not clear: %v", err)
	}
}

func TestNilMetricsAndReRegistration(t *testing.T) {
	var m *idempotency.Metrics
	s := idempotency.NewMemory()
	tl := &fnTool{name: "charge", fn: func(ctx context.Context, _ map[string]any) (map[string]any, error) { return tool.OK(nil), nil }}
	w := idempotency.Wrap(tl, s, idempotency.Options{Metrics: m})
	for range 2 {
		if _, err := w.Run(toolCtx("inv-1"), nil); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewRegistry()
	m1 := idempotency.NewMetrics(reg)
	m2 := idempotency.NewMetrics(reg) // reuses the registered counters
	m1.Replays.WithLabelValues("a", "t").Inc()
	if got := testutil.ToFloat64(m2.Replays.WithLabelValues("a", "t")); got != 1 {
		t.Fatalf("re-registered counter = %v", got)
	}
	if n, err := testutil.GatherAndCount(reg, idempotency.MetricReplays); err != nil || n != 1 {
		t.Fatalf("gather %s: %d, %v", idempotency.MetricReplays, n, err)
	}
	_ = idempotency.NewMetrics(nil)
}

// TestWaitEndedByContextIsInProgressError: when the caller's deadline ends
// the wait for another live owner, the error is still the typed, retryable,
// infrastructure InProgressError (wrapping the deadline), so the agent loop
// does not show it to the model as a tool timeout to retry.
func TestWaitEndedByContextIsInProgressError(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := idempotency.NewMemory()
	tl := &fnTool{name: "refund", fn: func(context.Context, map[string]any) (map[string]any, error) { return tool.OK(nil), nil }}
	m := idempotency.NewMetrics(prometheus.NewRegistry())
	// The first claim answers whatever the deadline (on a loaded machine
	// the 50ms could end before it did): the deadline ends the wait.
	w := idempotency.Wrap(tl, &firstClaimAnswers{Store: s}, idempotency.Options{Lease: time.Minute, WaitTimeout: time.Minute, Metrics: m})
	args := map[string]any{"order_id": "A-1"}
	claimedByOther(t, s, args)
	ctx, cancel := context.WithTimeout(toolCtx("inv-1"), 50*time.Millisecond)
	defer cancel()
	_, err := w.Run(ctx, args)
	var ipe *idempotency.InProgressError
	if !errors.As(err, &ipe) || ipe.Owner != "other" || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, idempotency.ErrInProgress) {
		t.Fatalf("Run = %v, want an InProgressError by other wrapping the deadline", err)
	}
	if !tool.IsInfrastructure(err) {
		t.Fatal("not infrastructure: the agent loop would hand it to the model")
	}
	if m, cerr := agent.ClassifyToolError()(ctx, nil, nil, err); m != nil || cerr != nil {
		t.Fatalf("ClassifyToolError turned it into %v, %v", m, cerr)
	}
	if tl.runs.Load() != 0 {
		t.Fatal("the tool ran while another owner held the key")
	}
	if got := testutil.ToFloat64(m.InProgressConflicts.WithLabelValues("support", "refund")); got != 1 {
		t.Fatalf("%s = %v, want 1", idempotency.MetricInProgressConflicts, got)
	}
}

// firstClaimAnswers runs its first Claim without the caller's deadline.
type firstClaimAnswers struct {
	idempotency.Store
	n atomic.Int32
}

func (s *firstClaimAnswers) Claim(ctx context.Context, req idempotency.ClaimRequest) (idempotency.Claim, error) {
	if s.n.Add(1) == 1 {
		ctx = context.WithoutCancel(ctx)
	}
	return s.Store.Claim(ctx, req)
}

// partitioned is a store that stops answering once the claim is made (a
// network partition: each call ends with its timeout).
type partitioned struct{ idempotency.Store }

func (partitioned) with(s idempotency.Store) idempotency.Store { return partitioned{s} }

func (p partitioned) Renew(ctx context.Context, _ idempotency.Ticket, _ time.Duration) (time.Time, error) {
	<-ctx.Done()
	return time.Time{}, &idempotency.StoreError{Backend: "memory", Op: "renew", Err: ctx.Err()}
}

func (p partitioned) Complete(ctx context.Context, _ idempotency.Ticket, _ json.RawMessage, _ time.Duration) error {
	<-ctx.Done()
	return &idempotency.StoreError{Backend: "memory", Op: "complete", Err: ctx.Err()}
}

// While the store does not answer renewals, the running tool is cancelled
// before its lease ends, so it has stopped before another owner can claim
// the key: the two never run the effect at once. (Before, the cancel came
// with the first failed renewal after the lease ended, up to StoreTimeout
// late, while the other owner already ran.)
func TestLeaseEndCancelsTheToolBeforeAnotherOwnerClaims(t *testing.T) {
	defer goleak.VerifyNone(t)
	cancelled, started := raceForTheKey(t, idempotency.NewMemory(), partitioned{}, nil)
	checkStoppedFirst(t, cancelled, started)
}

// raceForTheKey runs owner a's tool, which waits for its context to end,
// through the wrapper on mem, the store as a sees it through wrap (a
// partitioned or hung view of mem), while owner b keeps trying the same
// key on mem itself, as a second worker's redelivery would, until b runs
// the effect. It returns when a was cancelled (0: a was still running) and
// when b started, both read at the moment b started, then calls release
// (if set) and waits for a to end.
func raceForTheKey(t *testing.T, mem idempotency.Store, wrap interface {
	with(idempotency.Store) idempotency.Store
}, release func()) (aCancelled, bStarted int64) {
	t.Helper()
	// The tool is cancelled a tenth of the lease before it ends: 300ms for
	// the cancelled tool to be scheduled, on a loaded machine too (with a 1s
	// lease, a 100ms stall made the other owner start first).
	opts := idempotency.Options{Lease: 3 * time.Second, RenewInterval: 300 * time.Millisecond, StoreTimeout: 250 * time.Millisecond, WaitTimeout: -1}
	var cancelledAt, startedAt atomic.Int64 // UnixNano of each event
	aRunning := make(chan struct{})
	a := idempotency.Wrap(&fnTool{name: "refund", fn: func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		close(aRunning)
		<-ctx.Done()
		cancelledAt.Store(time.Now().UnixNano())
		return nil, ctx.Err()
	}}, wrap.with(mem), opts)
	b := idempotency.Wrap(&fnTool{name: "refund", fn: func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		startedAt.Store(time.Now().UnixNano())
		return tool.OK(nil), nil
	}}, mem, opts)
	done := make(chan struct{})
	go func() { _, _ = a.Run(toolCtx("inv-l"), nil); close(done) }()
	<-aRunning
	// Nothing signals the end of another worker's lease: poll, as a
	// second worker's redelivery would.
	for deadline := time.Now().Add(20 * time.Second); startedAt.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the other owner never claimed the key")
		}
		_, _ = b.Run(toolCtx("inv-l"), nil)
	}
	aCancelled, bStarted = cancelledAt.Load(), startedAt.Load()
	if release != nil {
		release()
	}
	<-done
	return aCancelled, bStarted
}

// checkStoppedFirst fails unless the first owner was cancelled before the
// second started the effect.
func checkStoppedFirst(t *testing.T, aCancelled, bStarted int64) {
	t.Helper()
	if aCancelled == 0 {
		t.Fatal("the first owner was still running when the second started the effect")
	}
	if aCancelled > bStarted {
		t.Fatalf("the first owner was cancelled %v after the second started the effect", time.Duration(aCancelled-bStarted))
	}
}

// hung is a store whose renewals hang past their context's deadline, as a
// go-redis call does on a stalled connection (the client bounds it by its
// read timeout, not by the caller's context), until release is closed.
type hung struct {
	idempotency.Store
	release chan struct{}
}

func (h hung) with(s idempotency.Store) idempotency.Store { return hung{s, h.release} }

func (h hung) Renew(_ context.Context, _ idempotency.Ticket, _ time.Duration) (time.Time, error) {
	<-h.release
	return time.Time{}, &idempotency.StoreError{Backend: "memory", Op: "renew", Err: errors.New("connection reset")}
}

// A renewal that hangs past its deadline does not hold back the cancel:
// the tool is still cancelled before its lease ends and another owner can
// claim the key. (Before, the renewer waited inside Renew, so the cancel
// came only when the store answered: the two owners ran at once.)
func TestHungRenewalDoesNotDelayTheCancel(t *testing.T) {
	defer goleak.VerifyNone(t)
	release := make(chan struct{})
	cancelled, started := raceForTheKey(t, idempotency.NewMemory(), hung{release: release}, func() { close(release) })
	checkStoppedFirst(t, cancelled, started)
}

// A running tool costs no renewal goroutine before its first renewal is
// due: 100 calls in their tools hold 100 goroutines (their callers'), not
// 200 (a worker at 4,000 invocations in flight runs many such tools).
func TestNoRenewalGoroutineBeforeTheFirstRenewal(t *testing.T) {
	defer goleak.VerifyNone(t)
	const calls = 100
	entered, release := make(chan struct{}, calls), make(chan struct{})
	tl := &fnTool{name: "provision", fn: func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		entered <- struct{}{}
		<-release
		return tool.OK(nil), nil
	}}
	w := idempotency.Wrap(tl, idempotency.NewMemory(), idempotency.Options{Lease: time.Hour})
	before := runtime.NumGoroutine()
	errs := make(chan error, calls)
	for i := range calls {
		go func() {
			_, err := w.Run(toolCtx(fmt.Sprint("inv-", i)), nil)
			errs <- err
		}()
	}
	for range calls {
		<-entered
	}
	n := runtime.NumGoroutine() - before
	close(release)
	for range calls {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n >= calls*3/2 {
		t.Fatalf("%d calls in their tools held %d goroutines; want about %d (no renewer before its first renewal)", calls, n, calls)
	}
}

// pollEndsWithDeadline answers the first claim from its store, and every
// later one only when the caller's context ends, with the store error a
// claim cut by its context gets: the deadline lands inside a poll.
type pollEndsWithDeadline struct {
	idempotency.Store
	n atomic.Int32
}

func (s *pollEndsWithDeadline) Claim(ctx context.Context, req idempotency.ClaimRequest) (idempotency.Claim, error) {
	if s.n.Add(1) == 1 {
		return s.Store.Claim(context.WithoutCancel(ctx), req)
	}
	<-ctx.Done()
	return idempotency.Claim{}, &idempotency.StoreError{Backend: "memory", Op: "claim", Err: ctx.Err()}
}

// The caller's context ending during a poll of a wait for another owner
// is the wait ended by the context, as when it ends between polls: an
// InProgressError by that owner wrapping the deadline, not a store outage.
// (It was a StoreError, counted as one, and failed
// TestWaitEndedByContextIsInProgressError on a loaded machine.)
func TestWaitEndedDuringAPollIsInProgressError(t *testing.T) {
	s := idempotency.NewMemory()
	tl := &fnTool{name: "refund", fn: func(context.Context, map[string]any) (map[string]any, error) { return tool.OK(nil), nil }}
	m := idempotency.NewMetrics(prometheus.NewRegistry())
	w := idempotency.Wrap(tl, &pollEndsWithDeadline{Store: s}, idempotency.Options{Lease: time.Minute, WaitTimeout: time.Minute, Metrics: m})
	args := map[string]any{"order_id": "A-1"}
	claimedByOther(t, s, args)
	ctx, cancel := context.WithTimeout(toolCtx("inv-1"), 100*time.Millisecond)
	defer cancel()
	_, err := w.Run(ctx, args)
	var ipe *idempotency.InProgressError
	if !errors.As(err, &ipe) || ipe.Owner != "other" || !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, idempotency.ErrStoreUnavailable) {
		t.Fatalf("Run = %v, want an InProgressError by other wrapping the deadline, not a store error", err)
	}
}

// claimedByOther claims the key of refund(args) in invocation inv-1 for
// the owner "other" in s, with a minute's lease.
func claimedByOther(t *testing.T, s idempotency.Store, args map[string]any) {
	t.Helper()
	key, err := idempotency.DeriveKey(idempotency.KeyInput{Agent: "support", InvocationID: "inv-1", Tool: "refund", Args: args})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(context.Background(), idempotency.ClaimRequest{Ticket: idempotency.Ticket{Key: key.String(), InvocationID: "inv-1", Owner: "other"}, Lease: time.Minute}); err != nil {
		t.Fatal(err)
	}
}
