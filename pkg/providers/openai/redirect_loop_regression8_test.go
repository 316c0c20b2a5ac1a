package openai

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/retry"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Regression (found in review, twenty-fifth session): an endpoint that
// keeps redirecting to itself (a misconfigured proxy or load balancer:
// same origin, so redirect.Guard lets it through) ended at the guard's own
// limit ("openai: stopped after 10 redirects") with a plain error, which
// net/http wraps in a *url.Error: pkg/taxonomy classified it TRANSPORT. The
// retry decorator retried it (10 more requests per attempt), the worker
// dead-lettered it as a transient failure and the replayer replayed it,
// again and again, although only a person fixing the endpoint can help.
// It is now what the cross-origin refusal is: a *model.ProviderError with
// the last redirect's 3xx status around ErrTooManyRedirects, classified
// UNKNOWN, not retried.
func TestRedirectLoopIsNotRetried(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Path, http.StatusTemporaryRedirect)
	})
	m := newTestModel(t, f)
	_, errs := collect(testCtx(t), m, userText("hi"), false)
	if len(errs) != 1 {
		t.Fatalf("errors = %v, want one", errs)
	}
	if c := taxonomy.ClassifyError(errs[0]); c != taxonomy.Unknown || taxonomy.PolicyFor(c).Retryable {
		t.Errorf("redirect loop classified %s, want UNKNOWN (not retryable): %v", c, errs[0])
	}
	var pe *model.ProviderError
	if !errors.Is(errs[0], ErrTooManyRedirects) || !errors.As(errs[0], &pe) || pe.StatusCode != http.StatusTemporaryRedirect {
		t.Errorf("redirect loop: %v, want a *model.ProviderError with status 307 around ErrTooManyRedirects", errs[0])
	}
	if errors.Is(errs[0], ErrRedirectRefused) {
		t.Errorf("redirect loop: %v says the redirect was refused for leaving the origin", errs[0])
	}

	perCall := f.count()
	if perCall != 10 {
		t.Errorf("one call sent %d requests, want 10 (net/http's limit: ten redirect responses)", perCall)
	}
	r, err := retry.New(m, retry.Config{MaxAttempts: 3, DisableBudget: true},
		retry.WithSleep(func(ctx context.Context, d time.Duration) error { return ctx.Err() }))
	if err != nil {
		t.Fatal(err)
	}
	for _, stream := range []bool{false, true} {
		before := f.count()
		_, errs := collect(testCtx(t), r, userText("hi"), stream)
		if got := f.count() - before; got != perCall || len(errs) != 1 {
			t.Errorf("stream=%v through the retry decorator: %d requests, errors %v; want %d requests (one attempt, not retried) and one error", stream, got, errs, perCall)
		}
	}
}
