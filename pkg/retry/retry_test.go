package retry_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/retry"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
	"github.com/agentfleet/agentfleet/pkg/taxonomy/taxonomytest"
)

// fakeTime is an injectable clock whose sleeps return at once and advance
// the clock by the requested duration. It records every wait.
type fakeTime struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func newFakeTime(now time.Time) *fakeTime { return &fakeTime{now: now} }

func (f *fakeTime) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeTime) Sleep(ctx context.Context, d time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.waits = append(f.waits, d)
	f.now = f.now.Add(d)
	return ctx.Err()
}

func (f *fakeTime) Waits() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.waits...)
}

// noJitter makes the wait the schedule's upper bound, so tests can assert
// exact values.
func noJitter(d time.Duration) time.Duration { return d }

type fixture struct {
	clock   *fakeTime
	metrics *taxonomy.Metrics
	budget  *retry.Budget
}

func newModel(t *testing.T, inner model.Model, cfg retry.Config) (*retry.Model, *fixture) {
	t.Helper()
	fx := &fixture{
		clock:   newFakeTime(time.Date(2025, 3, 3, 9, 0, 0, 0, time.UTC)),
		metrics: taxonomy.NewMetrics(nil),
		budget:  retry.NewBudget(retry.DefaultBudgetMaxTokens, retry.DefaultBudgetTokenRatio),
	}
	m, err := retry.New(inner, cfg,
		retry.WithSleep(fx.clock.Sleep), retry.WithClock(fx.clock.Now), retry.WithJitter(noJitter),
		retry.WithMetrics(fx.metrics), retry.WithBudget(fx.budget))
	if err != nil {
		t.Fatal(err)
	}
	return m, fx
}

func (fx *fixture) attempts(name string) float64 {
	return testutil.ToFloat64(fx.metrics.ProviderAttempts.WithLabelValues(name))
}

func (fx *fixture) calls(name string) float64 {
	return testutil.ToFloat64(fx.metrics.ModelCalls.WithLabelValues(name))
}

func collect(seq iter.Seq2[*model.Response, error]) ([]*model.Response, error) {
	var out []*model.Response
	for r, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

var req = &model.Request{Model: "scripted"}

func server503() error {
	return &model.ProviderError{Provider: "sim", StatusCode: 503, Status: "UNAVAILABLE"}
}

func TestRetry_TransientThenSuccess(t *testing.T) {
	llm := agenttest.NewScriptedModel(agenttest.Fail(server503()), agenttest.Fail(server503()), agenttest.Reply(agenttest.Text("ok")))
	m, fx := newModel(t, llm, retry.Config{MaxAttempts: 3})
	out, err := collect(m.GenerateContent(context.Background(), req, false))
	if err != nil || len(out) != 1 || out[0].Content.Text() != "ok" {
		t.Fatalf("got %v, %v", out, err)
	}
	if llm.Calls() != 3 || fx.attempts("scripted") != 3 || fx.calls("scripted") != 1 {
		t.Fatalf("inner calls %d, attempts %v, model calls %v; want 3, 3, 1", llm.Calls(), fx.attempts("scripted"), fx.calls("scripted"))
	}
	// The exponential schedule's upper bounds: 500ms, then x2.
	if w := fx.clock.Waits(); len(w) != 2 || w[0] != 500*time.Millisecond || w[1] != time.Second {
		t.Fatalf("waits %v, want [500ms 1s]", w)
	}
}

func TestRetry_MaxAttempts(t *testing.T) {
	llm := agenttest.NewScriptedModel(agenttest.Fail(server503()), agenttest.Fail(server503()), agenttest.Fail(server503()), agenttest.Reply(agenttest.Text("never")))
	m, fx := newModel(t, llm, retry.Config{MaxAttempts: 3})
	_, err := collect(m.GenerateContent(context.Background(), req, false))
	var gu *retry.GaveUpError
	if !errors.As(err, &gu) || gu.Reason != retry.ReasonMaxAttempts || gu.Attempts != 3 {
		t.Fatalf("want GaveUpError(max_attempts, 3), got %v", err)
	}
	if taxonomy.ClassifyError(err) != taxonomy.Server {
		t.Fatalf("wrapped error classifies as %s", taxonomy.ClassifyError(err))
	}
	if llm.Calls() != 3 || len(fx.clock.Waits()) != 2 {
		t.Fatalf("calls %d, waits %v", llm.Calls(), fx.clock.Waits())
	}
}

func TestRetry_ScheduleIsCappedAndJittered(t *testing.T) {
	steps := make([]agenttest.Step, 7)
	for i := range steps {
		steps[i] = agenttest.Fail(server503())
	}
	llm := agenttest.NewScriptedModel(steps...)
	var maxes []time.Duration
	clock := newFakeTime(time.Now())
	m, err := retry.New(llm, retry.Config{MaxAttempts: 7, DisableBudget: true},
		retry.WithSleep(clock.Sleep), retry.WithClock(clock.Now),
		retry.WithJitter(func(d time.Duration) time.Duration { maxes = append(maxes, d); return d / 2 }))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = collect(m.GenerateContent(context.Background(), req, false))
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second}
	if fmt.Sprint(maxes) != fmt.Sprint(want) {
		t.Fatalf("jitter upper bounds %v, want %v", maxes, want)
	}
	for i, w := range clock.Waits() {
		if w != want[i]/2 {
			t.Fatalf("wait %d = %v, want the jittered %v", i, w, want[i]/2)
		}
	}
}

func TestRetry_DefaultJitterStaysInRange(t *testing.T) {
	llm := agenttest.NewScriptedModel(agenttest.Fail(server503()), agenttest.Fail(server503()), agenttest.Fail(server503()))
	clock := newFakeTime(time.Now())
	m, err := retry.New(llm, retry.Config{MaxAttempts: 3, DisableBudget: true}, retry.WithSleep(clock.Sleep), retry.WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = collect(m.GenerateContent(context.Background(), req, false))
	w := clock.Waits()
	if len(w) != 2 || w[0] < 0 || w[0] > 500*time.Millisecond || w[1] < 0 || w[1] > time.Second {
		t.Fatalf("full-jitter waits %v out of [0, 500ms], [0, 1s]", w)
	}
}

// A streaming call that yielded output and then failed is never retried.
func TestRetry_NeverAfterEmission(t *testing.T) {
	llm := agenttest.NewScriptedModel(
		agenttest.Step{Responses: []*model.Response{agenttest.Partial("Your refund ")}, Err: server503()},
		agenttest.Reply(agenttest.Partial("Your refund "), agenttest.Text("Your refund is done.")),
	)
	m, fx := newModel(t, llm, retry.Config{})
	out, err := collect(m.GenerateContent(context.Background(), req, true))
	if len(out) != 1 || err == nil {
		t.Fatalf("want the partial then an error, got %d responses, err %v", len(out), err)
	}
	var gu *retry.GaveUpError
	if !errors.As(err, &gu) || gu.Reason != retry.ReasonOutputEmitted {
		t.Fatalf("want GaveUpError(output_emitted), got %v", err)
	}
	if llm.Calls() != 1 || fx.attempts("scripted") != 1 || len(fx.clock.Waits()) != 0 {
		t.Fatalf("calls %d, attempts %v, waits %v; want 1 attempt, no wait", llm.Calls(), fx.attempts("scripted"), fx.clock.Waits())
	}
}

func TestRetry_OnlyRetryableClasses(t *testing.T) {
	errs := map[taxonomy.Class]error{
		taxonomy.Transport:      fmt.Errorf("read: %w", syscall.ECONNRESET),
		taxonomy.Timeout:        &model.ProviderError{StatusCode: 504},
		taxonomy.RateLimited:    &model.ProviderError{StatusCode: 429},
		taxonomy.Server:         server503(),
		taxonomy.QuotaExhausted: &model.ProviderError{StatusCode: 429, QuotaExhausted: true},
		taxonomy.BadRequest:     &model.ProviderError{StatusCode: 400},
		taxonomy.Auth:           &model.ProviderError{StatusCode: 401},
		taxonomy.NotFound:       &model.ProviderError{StatusCode: 404},
		taxonomy.CallBudget:     &model.CallBudgetError{Limit: 1, Attempted: 2},
		taxonomy.Unknown:        errors.New("something new"),
		taxonomy.Canceled:       fmt.Errorf("call: %w", context.Canceled),
	}
	for class, e := range errs {
		t.Run(string(class), func(t *testing.T) {
			if got := taxonomy.ClassifyError(e); got != class {
				t.Fatalf("test error classifies as %s", got)
			}
			llm := agenttest.NewScriptedModel(agenttest.Fail(e), agenttest.Reply(agenttest.Text("ok")))
			m, _ := newModel(t, llm, retry.Config{})
			_, err := collect(m.GenerateContent(context.Background(), req, false))
			if taxonomy.PolicyFor(class).Retryable {
				if err != nil || llm.Calls() != 2 {
					t.Fatalf("retryable %s: calls %d, err %v", class, llm.Calls(), err)
				}
				return
			}
			if llm.Calls() != 1 {
				t.Fatalf("non-retryable %s attempted %d times", class, llm.Calls())
			}
			if err != e {
				t.Fatalf("non-retryable error must pass through unchanged, got %v", err)
			}
		})
	}
}

func TestRetry_InBandFailureIsNotRetried(t *testing.T) {
	blocked := &model.Response{FinishReason: model.FinishReasonSafety, ErrorCode: model.FinishReasonSafety}
	llm := agenttest.NewScriptedModel(agenttest.Reply(blocked), agenttest.Reply(agenttest.Text("ok")))
	m, _ := newModel(t, llm, retry.Config{})
	out, err := collect(m.GenerateContent(context.Background(), req, false))
	if err != nil || len(out) != 1 || out[0].FinishReason != model.FinishReasonSafety || llm.Calls() != 1 {
		t.Fatalf("in-band failure: %v, %v, calls %d", out, err, llm.Calls())
	}
}

func TestRetry_HintAboveCapFailsFast(t *testing.T) {
	cases := map[string]func(t *testing.T) error{
		"openai Retry-After": func(t *testing.T) error {
			return taxonomytest.OpenAIError(t, 429, http.Header{"Retry-After": {"60"}}, "requests", "rate_limit_exceeded", "slow down")
		},
		"gemini RetryInfo": func(t *testing.T) error {
			return taxonomytest.GeminiError(t, 429, "RESOURCE_EXHAUSTED", "quota", taxonomytest.RetryInfo("45s"))
		},
		"provider RetryAfter": func(t *testing.T) error {
			return &model.ProviderError{StatusCode: 503, RetryAfter: time.Minute}
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			llm := agenttest.NewScriptedModel(agenttest.Fail(mk(t)), agenttest.Reply(agenttest.Text("ok")))
			m, fx := newModel(t, llm, retry.Config{})
			_, err := collect(m.GenerateContent(context.Background(), req, false))
			var gu *retry.GaveUpError
			if !errors.As(err, &gu) || gu.Reason != retry.ReasonHintTooLong {
				t.Fatalf("want GaveUpError(hint_too_long), got %v", err)
			}
			if llm.Calls() != 1 || len(fx.clock.Waits()) != 0 {
				t.Fatalf("calls %d, waits %v; want 1 attempt and no sleep", llm.Calls(), fx.clock.Waits())
			}
		})
	}
}

func TestRetry_HintWithinCapIsTheWait(t *testing.T) {
	base := time.Date(2025, 3, 3, 9, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		err  func(t *testing.T) error
		want time.Duration
	}{
		{"Retry-After seconds", func(t *testing.T) error {
			return taxonomytest.OpenAIError(t, 429, http.Header{"Retry-After": {"7"}}, "requests", "rate_limit_exceeded", "x")
		}, 7 * time.Second},
		{"retry-after-ms wins", func(t *testing.T) error {
			return taxonomytest.OpenAIError(t, 503, http.Header{"Retry-After": {"7"}, "Retry-After-Ms": {"1500"}}, "server_error", "", "x")
		}, 1500 * time.Millisecond},
		{"Retry-After HTTP date", func(t *testing.T) error {
			return taxonomytest.OpenAIError(t, 429, http.Header{"Retry-After": {base.Add(20 * time.Second).Format(http.TimeFormat)}}, "requests", "", "x")
		}, 20 * time.Second},
		{"Gemini RetryInfo", func(t *testing.T) error {
			return taxonomytest.GeminiError(t, 429, "RESOURCE_EXHAUSTED", "x",
				taxonomytest.QuotaFailure("GenerateRequestsPerMinutePerProjectPerModel", "m"), taxonomytest.RetryInfo("17s"))
		}, 17 * time.Second},
		{"ProviderError.RetryAfter", func(t *testing.T) error {
			return &model.ProviderError{StatusCode: 429, RetryAfter: 3 * time.Second}
		}, 3 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			llm := agenttest.NewScriptedModel(agenttest.Fail(tc.err(t)), agenttest.Reply(agenttest.Text("ok")))
			m, fx := newModel(t, llm, retry.Config{})
			fx.clock.now = base
			if _, err := collect(m.GenerateContent(context.Background(), req, false)); err != nil {
				t.Fatal(err)
			}
			// noJitter spreads by the most: the hint and a fifth of it.
			if w, want := fx.clock.Waits(), tc.want+tc.want/5; len(w) != 1 || w[0] != want {
				t.Fatalf("waits %v, want [%v]", w, want)
			}
		})
	}
}

// The hint is the shortest wait, whatever the jitter draws, and the spread
// on top of it is what the jitter drew from [0, hint/5].
func TestRetry_HintSpread(t *testing.T) {
	hint := 10 * time.Second
	for _, tc := range []struct {
		name   string
		jitter func(time.Duration) time.Duration
		want   time.Duration
	}{
		{"no spread drawn", func(time.Duration) time.Duration { return 0 }, hint},
		{"half the spread", func(max time.Duration) time.Duration { return max / 2 }, hint + time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []time.Duration
			llm := agenttest.NewScriptedModel(agenttest.Fail(&model.ProviderError{StatusCode: 429, RetryAfter: hint}), agenttest.Reply(agenttest.Text("ok")))
			m, err := retry.New(llm, retry.Config{DisableBudget: true}, retry.WithJitter(tc.jitter),
				retry.WithSleep(func(_ context.Context, d time.Duration) error { got = append(got, d); return nil }))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := collect(m.GenerateContent(context.Background(), req, false)); err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0] != tc.want {
				t.Fatalf("waits %v, want [%v]", got, tc.want)
			}
		})
	}
	t.Run("only the hint fits the deadline", func(t *testing.T) {
		llm := agenttest.NewScriptedModel(agenttest.Fail(&model.ProviderError{StatusCode: 429, RetryAfter: hint}), agenttest.Reply(agenttest.Text("ok")))
		m, fx := newModel(t, llm, retry.Config{})
		deadline := time.Now().Add(time.Hour)
		fx.clock.now = deadline.Add(-hint - time.Second) // the hint fits, the hint and a fifth do not
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		if _, err := collect(m.GenerateContent(ctx, req, false)); err != nil {
			t.Fatal(err)
		}
		if w := fx.clock.Waits(); len(w) != 1 || w[0] != hint {
			t.Fatalf("waits %v, want [%v]", w, hint)
		}
	})
}

// During a full outage the retry budget holds provider attempts to about
// one per call.
func TestRetry_BudgetHoldsOutageAttempts(t *testing.T) {
	var innerCalls atomic.Int64
	outage := model.Func{ModelName: "gemini-2.5-flash", Generate: func(ctx context.Context, _ *model.Request, _ bool) iter.Seq2[*model.Response, error] {
		innerCalls.Add(1)
		return model.Single(nil, server503())
	}}
	m, fx := newModel(t, outage, retry.Config{MaxAttempts: 3})
	const calls = 1000
	for range calls {
		if _, err := collect(m.GenerateContent(context.Background(), req, false)); err == nil {
			t.Fatal("outage call succeeded")
		}
	}
	attempts := innerCalls.Load()
	if attempts > calls*11/10 {
		t.Fatalf("%d attempts for %d calls: budget did not hold (<= 1.1x)", attempts, calls)
	}
	// 10 tokens, retries only above 5: call 1 makes 3 attempts, call 2
	// makes 2, every later call 1.
	if attempts != 1003 {
		t.Fatalf("attempts = %d, want 1003", attempts)
	}
	if got := fx.attempts("gemini-2.5-flash"); got != float64(attempts) {
		t.Fatalf("attempts metric %v, inner calls %d", got, attempts)
	}
	if got := testutil.ToFloat64(fx.metrics.RetryBudgetRefusals.WithLabelValues("gemini-2.5-flash")); got != calls-1 {
		t.Fatalf("budget refusals %v, want %d", got, calls-1)
	}
	if fx.calls("gemini-2.5-flash") != calls {
		t.Fatalf("model calls metric %v", fx.calls("gemini-2.5-flash"))
	}
}

func TestBudget_RefillsOnSuccess(t *testing.T) {
	b := retry.NewBudget(10, 0.1)
	for range 10 {
		b.OnFailure()
	}
	if b.Tokens() != 0 || b.AllowRetry() {
		t.Fatalf("drained budget: tokens %v, allow %v", b.Tokens(), b.AllowRetry())
	}
	for range 51 {
		b.OnSuccess()
	}
	if !b.AllowRetry() {
		t.Fatalf("51 successes (%.1f tokens) should allow retries again", b.Tokens())
	}
	for range 100 {
		b.OnSuccess()
	}
	if b.Tokens() != 10 {
		t.Fatalf("tokens %v, capped at 10", b.Tokens())
	}
	first, second := retry.DefaultBudgets.For("x", 10, 0.1), retry.DefaultBudgets.For("x", 10, 0.1)
	if first != second {
		t.Fatal("budgets of one model and one setting are not shared")
	}
	// Regression (found in review, seventeenth session): another setting
	// for the same model got the first creator's budget.
	if other := retry.DefaultBudgets.For("x", 3, 1); other == first || other.Tokens() != 3 {
		t.Fatalf("a decorator configured for 3 tokens got a budget of %v tokens (shared with the 10-token one: %v)",
			other.Tokens(), other == first)
	}
}

func TestRetry_DeadlineCoversAllAttempts(t *testing.T) {
	steps := []agenttest.Step{agenttest.Fail(server503()), agenttest.Fail(server503()), agenttest.Reply(agenttest.Text("late"))}
	t.Run("first wait does not fit", func(t *testing.T) {
		llm := agenttest.NewScriptedModel(steps...)
		m, fx := newModel(t, llm, retry.Config{MaxAttempts: 3})
		deadline := time.Now().Add(time.Hour)
		fx.clock.now = deadline.Add(-300 * time.Millisecond) // 500ms wait > 300ms left
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		_, err := collect(m.GenerateContent(ctx, req, false))
		var gu *retry.GaveUpError
		if !errors.As(err, &gu) || gu.Reason != retry.ReasonDeadline || llm.Calls() != 1 || len(fx.clock.Waits()) != 0 {
			t.Fatalf("err %v, calls %d, waits %v; want deadline after 1 attempt, no sleep", err, llm.Calls(), fx.clock.Waits())
		}
	})
	t.Run("second wait does not fit", func(t *testing.T) {
		llm := agenttest.NewScriptedModel(steps...)
		m, fx := newModel(t, llm, retry.Config{MaxAttempts: 3})
		deadline := time.Now().Add(time.Hour)
		fx.clock.now = deadline.Add(-1200 * time.Millisecond) // 500ms fits, then 1s does not
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		_, err := collect(m.GenerateContent(ctx, req, false))
		var gu *retry.GaveUpError
		if !errors.As(err, &gu) || gu.Reason != retry.ReasonDeadline || gu.Attempts != 2 || llm.Calls() != 2 {
			t.Fatalf("err %v, calls %d; want deadline after 2 attempts", err, llm.Calls())
		}
		if taxonomy.ClassifyError(err) != taxonomy.Server {
			t.Fatalf("the last attempt's error must be returned, classified %s", taxonomy.ClassifyError(err))
		}
	})
	t.Run("hint does not fit", func(t *testing.T) {
		llm := agenttest.NewScriptedModel(agenttest.Fail(&model.ProviderError{StatusCode: 429, RetryAfter: 10 * time.Second}), agenttest.Reply(agenttest.Text("ok")))
		m, fx := newModel(t, llm, retry.Config{MaxAttempts: 3})
		deadline := time.Now().Add(time.Hour)
		fx.clock.now = deadline.Add(-5 * time.Second)
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		_, err := collect(m.GenerateContent(ctx, req, false))
		if llm.Calls() != 1 || len(fx.clock.Waits()) != 0 || err == nil {
			t.Fatalf("calls %d, waits %v, err %v", llm.Calls(), fx.clock.Waits(), err)
		}
	})
}

func TestRetry_CanceledWhileWaiting(t *testing.T) {
	llm := agenttest.NewScriptedModel(agenttest.Fail(server503()), agenttest.Reply(agenttest.Text("ok")))
	ctx, cancel := context.WithCancel(context.Background())
	m, err := retry.New(llm, retry.Config{MaxAttempts: 3, DisableBudget: true}, retry.WithSleep(func(ctx context.Context, d time.Duration) error {
		cancel()
		return ctx.Err()
	}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = collect(m.GenerateContent(ctx, req, false))
	if !taxonomy.IsCanceled(err) || taxonomy.ClassifyError(err) != taxonomy.Canceled || llm.Calls() != 1 {
		t.Fatalf("err %v (class %s), calls %d", err, taxonomy.ClassifyError(err), llm.Calls())
	}
}

func TestRetry_RealTimerSleepHonoursContext(t *testing.T) {
	// The default sleep must return as soon as ctx ends, not after the
	// (one hour) wait: the inner model cancels ctx while failing, so the
	// decorator reaches its real timer with a cancelled context. If the
	// timer ignored ctx the test would hang.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var calls atomic.Int32
	inner := model.Func{ModelName: "m", Generate: func(context.Context, *model.Request, bool) iter.Seq2[*model.Response, error] {
		calls.Add(1)
		cancel()
		return model.Single(nil, server503())
	}}
	m, err := retry.New(inner, retry.Config{InitialInterval: time.Hour, MaxInterval: time.Hour, DisableBudget: true},
		retry.WithJitter(noJitter))
	if err != nil {
		t.Fatal(err)
	}
	_, err = collect(m.GenerateContent(ctx, req, false))
	var gu *retry.GaveUpError
	if !errors.As(err, &gu) || gu.Reason != retry.ReasonCanceled || !taxonomy.IsCanceled(err) || calls.Load() != 1 {
		t.Fatalf("want GaveUpError(canceled) after 1 attempt, got %v (calls %d)", err, calls.Load())
	}
}

func TestRetry_Accounting(t *testing.T) {
	steps := func() []agenttest.Step {
		return []agenttest.Step{agenttest.Fail(server503()), agenttest.Fail(server503()), agenttest.Reply(agenttest.Text("ok"))}
	}
	t.Run("per call charges nothing", func(t *testing.T) {
		llm := agenttest.NewScriptedModel(steps()...)
		m, _ := newModel(t, llm, retry.Config{MaxAttempts: 3})
		b := model.NewCallBudget(2)
		_ = b.Charge() // the agent loop's charge for this step
		if _, err := collect(m.GenerateContent(model.WithCallBudget(context.Background(), b), req, false)); err != nil {
			t.Fatal(err)
		}
		if b.Used() != 1 || llm.Calls() != 3 {
			t.Fatalf("budget used %d, calls %d; want 1, 3", b.Used(), llm.Calls())
		}
	})
	t.Run("per attempt charges every retry", func(t *testing.T) {
		llm := agenttest.NewScriptedModel(steps()...)
		m, _ := newModel(t, llm, retry.Config{MaxAttempts: 3, Accounting: retry.PerAttempt})
		b := model.NewCallBudget(5)
		_ = b.Charge()
		if _, err := collect(m.GenerateContent(model.WithCallBudget(context.Background(), b), req, false)); err != nil {
			t.Fatal(err)
		}
		if b.Used() != 3 || llm.Calls() != 3 {
			t.Fatalf("budget used %d, calls %d; want 3, 3", b.Used(), llm.Calls())
		}
	})
	t.Run("per attempt refusal is CALL_BUDGET", func(t *testing.T) {
		llm := agenttest.NewScriptedModel(steps()...)
		m, _ := newModel(t, llm, retry.Config{MaxAttempts: 3, Accounting: retry.PerAttempt})
		b := model.NewCallBudget(2)
		_ = b.Charge()
		_, err := collect(m.GenerateContent(model.WithCallBudget(context.Background(), b), req, false))
		var gu *retry.GaveUpError
		if !errors.As(err, &gu) || gu.Reason != retry.ReasonCallBudget || !errors.Is(err, model.ErrCallBudgetExceeded) {
			t.Fatalf("want GaveUpError(call_budget), got %v", err)
		}
		if taxonomy.ClassifyError(err) != taxonomy.CallBudget || llm.Calls() != 2 || b.Used() != 2 {
			t.Fatalf("class %s, calls %d, used %d", taxonomy.ClassifyError(err), llm.Calls(), b.Used())
		}
	})
}

func TestRetry_ConsumerBreakStops(t *testing.T) {
	llm := agenttest.NewScriptedModel(agenttest.Reply(agenttest.Partial("a"), agenttest.Partial("b"), agenttest.Text("ab")))
	m, _ := newModel(t, llm, retry.Config{})
	n := 0
	for range m.GenerateContent(context.Background(), req, true) {
		n++
		break
	}
	if n != 1 || llm.Calls() != 1 {
		t.Fatalf("yielded %d, calls %d", n, llm.Calls())
	}
}

func TestConfig(t *testing.T) {
	c := retry.Config{}.WithDefaults()
	want := retry.Config{MaxAttempts: 2, InitialInterval: 500 * time.Millisecond, Multiplier: 2, MaxInterval: 8 * time.Second,
		MaxHint: 30 * time.Second, BudgetMaxTokens: 10, BudgetTokenRatio: 0.1, AttemptTimeout: 2 * time.Minute}
	if c != want {
		t.Fatalf("defaults %+v, want %+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := retry.Config{MaxAttempts: -1, InitialInterval: time.Second, Multiplier: 0.5, MaxInterval: time.Millisecond, MaxHint: -1, BudgetMaxTokens: -1, BudgetTokenRatio: -1, Accounting: 7}
	err := bad.Validate()
	if err == nil {
		t.Fatal("invalid config accepted")
	}
	if _, err := retry.New(agenttest.NewScriptedModel(), retry.Config{Multiplier: 0.5}); err == nil {
		t.Fatal("New accepted an invalid config")
	}
	if _, err := retry.New(nil, retry.Config{}); err == nil {
		t.Fatal("New accepted a nil model")
	}
}
