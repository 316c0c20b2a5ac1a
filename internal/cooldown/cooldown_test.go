package cooldown_test

import (
	"context"
	"errors"
	"iter"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/cooldown"
	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

var errOverload = &model.ProviderError{Provider: "test", StatusCode: 503}

func isTransient(err error) bool { return errors.Is(err, errOverload) }

func cfg() cooldown.Config {
	return cooldown.Config{Window: 10 * time.Second, Buckets: 10, Threshold: 0.5, MinCalls: 10, Duration: time.Minute, CheckInterval: time.Nanosecond}
}

func stores(t *testing.T) map[string]cooldown.Store {
	m := map[string]cooldown.Store{"memory": cooldown.NewMemory(cfg())}
	for _, kind := range redistest.Kinds() {
		c, prefix := kind.New(t)
		m["redis-"+kind.Name] = cooldown.NewRedis(c, prefix, cfg())
	}
	return m
}

func TestStoreOpensOnlyPastThreshold(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			// 10 successes, then 9 failures: 9/19 stays below the threshold.
			for range 10 {
				if until, err := s.Record(ctx, "m", false); err != nil || !until.IsZero() {
					t.Fatalf("until=%v err=%v, want closed", until, err)
				}
			}
			for i := range 9 {
				if until, _ := s.Record(ctx, "m", true); !until.IsZero() {
					t.Fatalf("opened at %d/%d failures, below the threshold", i+1, 11+i)
				}
			}
			// One more failure: 10/20 = 0.5 opens.
			until, err := s.Record(ctx, "m", true)
			if err != nil || until.IsZero() {
				t.Fatalf("did not open at 10/20: %v %v", until, err)
			}
			st, err := s.Status(ctx, "m")
			if err != nil || st.IsZero() || st.Before(time.Now().Add(50*time.Second)) {
				t.Fatalf("status = %v %v, want open for about a minute", st, err)
			}
			if other, _ := s.Status(ctx, "other-model"); !other.IsZero() {
				t.Fatal("cooldown leaked to another model")
			}
		})
	}
}

func TestDecoratorStopsCallsWhileOpenAcrossWorkers(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			var calls atomic.Int32
			provider := model.Func{ModelName: "gemini-x", Generate: func(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
				calls.Add(1)
				return model.Single(nil, errOverload)
			}}
			// Two "workers" share the store.
			w1 := cooldown.Wrap(provider, s, cfg(), isTransient)
			w2 := cooldown.Wrap(provider, s, cfg(), isTransient)
			ctx := context.Background()
			for range 10 {
				for _, err := range w1.GenerateContent(ctx, &model.Request{}, false) {
					if !errors.Is(err, errOverload) {
						t.Fatalf("err = %v", err)
					}
				}
			}
			if calls.Load() != 10 {
				t.Fatalf("provider calls = %d, want 10", calls.Load())
			}
			// The breaker is open now: the other worker does not call the provider.
			for _, err := range w2.GenerateContent(ctx, &model.Request{}, false) {
				var oe *cooldown.OpenError
				if !errors.As(err, &oe) || oe.Model != "gemini-x" || oe.RetryIn(time.Now()) < time.Second {
					t.Fatalf("err = %v, want *OpenError", err)
				}
			}
			if calls.Load() != 10 {
				t.Fatalf("provider called during cooldown: %d calls", calls.Load())
			}
		})
	}
}

func TestDecoratorFailsOpenWhenStoreDown(t *testing.T) {
	down := cooldown.NewRedis(redisClientOn(t, redistest.ClosedURL()), "x:", cfg())
	var calls atomic.Int32
	provider := model.Func{ModelName: "m", Generate: func(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
		calls.Add(1)
		return model.Single(&model.Response{}, nil)
	}}
	m := cooldown.Wrap(provider, down, cfg(), isTransient)
	for _, err := range m.GenerateContent(context.Background(), &model.Request{}, false) {
		if err != nil {
			t.Fatalf("breaker store down must not fail the call: %v", err)
		}
	}
	if calls.Load() != 1 {
		t.Fatal("provider not called")
	}
}

func TestStoreNeverOpensBelowMinCalls(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			for i := range 9 { // every attempt fails, but 9 < MinCalls
				if until, err := s.Record(context.Background(), "m", true); err != nil || !until.IsZero() {
					t.Fatalf("attempt %d: opened below min calls (%v, %v)", i+1, until, err)
				}
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (cooldown.Config{}).WithDefaults().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	if err := (cooldown.Config{Threshold: 2}).WithDefaults().Validate(); err == nil {
		t.Fatal("threshold 2 accepted")
	}
	// Regression (found in review, nineteenth session): NaN passed
	// "<= 0 || > 1", and the breaker's "fails >= NaN*calls" never opened.
	if err := (cooldown.Config{Threshold: math.NaN()}).WithDefaults().Validate(); err == nil {
		t.Fatal("threshold NaN accepted")
	}
}
