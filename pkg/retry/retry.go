package retry

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Model is the retrying decorator. Build it with New.
type Model struct {
	inner   model.Model
	cfg     Config
	budget  *Budget
	metrics *taxonomy.Metrics
	sleep   func(ctx context.Context, d time.Duration) error
	now     func() time.Time
	jitter  func(max time.Duration) time.Duration
}

var _ model.Model = (*Model)(nil)

// Option customises New.
type Option func(*Model)

// WithMetrics counts model calls, provider attempts and budget refusals.
func WithMetrics(m *taxonomy.Metrics) Option { return func(r *Model) { r.metrics = m } }

// WithBudget uses b as the retry budget instead of the process-wide budget
// of the model's name in DefaultBudgets. Config.DisableBudget wins over it.
func WithBudget(b *Budget) Option { return func(r *Model) { r.budget = b } }

// WithSleep replaces the wait between attempts. The function must return
// ctx's error if ctx ends first. Tests use it to record waits instead of
// sleeping.
func WithSleep(sleep func(ctx context.Context, d time.Duration) error) Option {
	return func(r *Model) { r.sleep = sleep }
}

// WithClock replaces time.Now, used to check the deadline and to read
// HTTP-date hints.
func WithClock(now func() time.Time) Option { return func(r *Model) { r.now = now } }

// WithJitter replaces the full-jitter function, which must return a
// duration in [0, max].
func WithJitter(jitter func(max time.Duration) time.Duration) Option {
	return func(r *Model) { r.jitter = jitter }
}

// New returns inner decorated with retries. cfg is completed with
// WithDefaults and validated; an invalid config is an error.
func New(inner model.Model, cfg Config, opts ...Option) (*Model, error) {
	if inner == nil {
		return nil, fmt.Errorf("retry: inner model is nil")
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("retry: invalid config for model %s: %w", inner.Name(), err)
	}
	r := &Model{
		inner:  inner,
		cfg:    cfg,
		sleep:  sleepCtx,
		now:    time.Now,
		jitter: fullJitter,
	}
	for _, o := range opts {
		o(r)
	}
	if r.budget == nil && !cfg.DisableBudget {
		r.budget = DefaultBudgets.For(inner.Name(), cfg.BudgetMaxTokens, cfg.BudgetTokenRatio)
	}
	if cfg.DisableBudget {
		r.budget = nil
	}
	return r, nil
}

// Name returns the inner model's name.
func (r *Model) Name() string { return r.inner.Name() }

// Config returns the effective configuration (defaults applied).
func (r *Model) Config() Config { return r.cfg }

// Budget returns the retry budget in use (nil when disabled).
func (r *Model) Budget() *Budget { return r.budget }

// GenerateContent makes one model call, retrying the inner model as the
// package documentation describes. Responses are forwarded as they come;
// once one has been forwarded the call is never retried.
func (r *Model) GenerateContent(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		name := r.inner.Name()
		r.metrics.ModelCall(name)
		var sched *backoff.ExponentialBackOff // made at the first retry: most calls have none
		var lastErr error                     // the last provider attempt's error
		charged := false                      // PerAttempt charged the budget for this attempt
		for attempt := 1; ; attempt++ {
			emitted, err, stopped := r.attempt(ctx, req, stream, yield)
			notSent := err != nil && isNotSent(err)
			if !notSent {
				r.metrics.ProviderAttempt(name)
			}
			if stopped {
				return
			}
			if err == nil {
				r.budget.OnSuccess()
				return
			}
			if notSent {
				// Refused before the provider (the fleet cooldown opened
				// after the last attempt): not an attempt and not a
				// failure of its own, so PerAttempt's charge for it is
				// given back. The first attempt's refusal is returned as
				// it is; a later one as the last provider failure, with
				// the refusal as its cause.
				if charged {
					model.CallBudgetFrom(ctx).Refund()
				}
				if attempt > 1 {
					err = &GaveUpError{Model: name, Attempts: attempt - 1, Reason: ReasonNotSent, Err: lastErr, Cause: err}
				}
				yield(nil, err)
				return
			}
			lastErr = err
			class := taxonomy.ClassifyError(err)
			retryable := taxonomy.PolicyFor(class).Retryable
			// The caller's own context ending (its deadline, a cancel) is
			// not a provider failure: it spends none of the budget every
			// decorator of this model shares (found in review, seventeenth
			// session: impatient callers drained it for a healthy model).
			if retryable && ctx.Err() == nil {
				r.budget.OnFailure()
			}
			gaveUp := func(reason string, cause error) error {
				return &GaveUpError{Model: name, Attempts: attempt, Reason: reason, Err: err, Cause: cause}
			}
			switch {
			case !retryable:
				if attempt > 1 {
					err = gaveUp(ReasonNotRetryable, nil)
				}
				yield(nil, err)
				return
			case emitted:
				yield(nil, gaveUp(ReasonOutputEmitted, nil))
				return
			case attempt >= r.cfg.MaxAttempts:
				yield(nil, gaveUp(ReasonMaxAttempts, nil))
				return
			}
			if !r.budget.AllowRetry() {
				r.metrics.RetryBudgetRefusal(name)
				yield(nil, gaveUp(ReasonBudget, nil))
				return
			}
			now := r.now()
			deadline, hasDeadline := ctx.Deadline()
			fits := func(d time.Duration) bool { return !hasDeadline || now.Add(d).Before(deadline) }
			if sched == nil {
				sched = r.schedule()
			}
			wait := r.jitter(sched.NextBackOff())
			if hint, ok := ServerHint(err, now); ok {
				if hint > r.cfg.MaxHint {
					yield(nil, gaveUp(ReasonHintTooLong, nil))
					return
				}
				// The hint is the shortest wait; a spread of up to a fifth
				// of it on top keeps the workers the same 429 reached from
				// coming back at the same instant. Without the spread when
				// only the hint itself fits the deadline.
				wait = hint
				if spread := hint + r.jitter(hint/hintSpreadDivisor); fits(spread) {
					wait = spread
				}
			}
			if !fits(wait) {
				yield(nil, gaveUp(ReasonDeadline, nil))
				return
			}
			// PerAttempt charges the retry before its wait, not after it:
			// an invocation whose budget is spent ends now instead of
			// sleeping the backoff or the server's hint first (found in
			// review, twenty-fifth session). A wait cut short gives the
			// charge back: the attempt never ran.
			if r.cfg.Accounting == PerAttempt {
				if berr := model.CallBudgetFrom(ctx).Charge(); berr != nil {
					yield(nil, gaveUp(ReasonCallBudget, berr))
					return
				}
				charged = true
			}
			if serr := r.sleep(ctx, wait); serr != nil {
				if charged {
					model.CallBudgetFrom(ctx).Refund()
				}
				yield(nil, gaveUp(ReasonCanceled, serr))
				return
			}
		}
	}
}

// errAttemptTimedOut is the cause of an attempt context that ended at
// Config.AttemptTimeout.
var errAttemptTimedOut = errors.New("retry: the attempt timed out")

// attempt runs one provider attempt, forwarding its responses. It returns
// whether any response was forwarded, the error that ended the attempt,
// and whether the consumer stopped iterating.
//
// The attempt runs on a context that ends after Config.AttemptTimeout; an
// error it ends with once that passed (and ctx has not ended) is returned
// as an *AttemptTimeoutError.
func (r *Model) attempt(ctx context.Context, req *model.Request, stream bool, yield func(*model.Response, error) bool) (emitted bool, err error, stopped bool) {
	actx := ctx
	if r.cfg.AttemptTimeout > 0 {
		var cancel context.CancelFunc
		// With a cause of its own: a decorator inside (the fleet
		// cooldown) tells this attempt's timeout, a provider failure, from
		// the caller's own deadline, which is not (context.Cause).
		actx, cancel = context.WithTimeoutCause(ctx, r.cfg.AttemptTimeout, errAttemptTimedOut)
		defer cancel()
	}
	for resp, e := range r.inner.GenerateContent(actx, req, stream) {
		if e != nil {
			if actx != ctx && actx.Err() != nil && ctx.Err() == nil {
				e = &AttemptTimeoutError{Model: r.inner.Name(), After: r.cfg.AttemptTimeout, Err: e}
			}
			return emitted, e, false
		}
		emitted = true
		if !yield(resp, nil) {
			return true, nil, true
		}
	}
	return emitted, nil, false
}

// schedule returns the exponential schedule of base waits for one call:
// backoff's ExponentialBackOff with its own randomisation turned off
// (RandomizationFactor 0) and no elapsed-time limit (the context's deadline
// is the limit), so NextBackOff yields InitialInterval, *Multiplier, ...
// capped at MaxInterval. Full jitter is applied on top by r.jitter.
func (r *Model) schedule() *backoff.ExponentialBackOff {
	return backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(r.cfg.InitialInterval),
		backoff.WithMultiplier(r.cfg.Multiplier),
		backoff.WithMaxInterval(r.cfg.MaxInterval),
		backoff.WithRandomizationFactor(0),
		backoff.WithMaxElapsedTime(0),
	)
}

// hintSpreadDivisor sets the random spread added to a server hint: up to
// hint/hintSpreadDivisor.
const hintSpreadDivisor = 5

// fullJitter returns a uniformly random duration in [0, max] ("full
// jitter": spreads synchronized clients over the whole interval).
func fullJitter(max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(max) + 1))
}

// sleepCtx waits d on a timer, returning ctx's error if ctx ends first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// isNotSent is errors.Is(err, model.ErrNotSent) on a chain whose methods
// may panic (an SDK's typed-nil error): such a chain is not a refusal, as
// taxonomy.ClassifyError files it UNKNOWN rather than panic (found in
// review, twenty-first session).
func isNotSent(err error) (notSent bool) {
	defer func() {
		if recover() != nil {
			notSent = false
		}
	}()
	return errors.Is(err, model.ErrNotSent)
}
