package gemini

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
// keeps redirecting to itself ended at the shared redirect guard's limit
// with a plain error, which net/http wraps in a *url.Error: TRANSPORT,
// retried, dead-lettered as transient and replayed for ever. It is now a
// *model.ProviderError with the last redirect's 3xx status around
// ErrTooManyRedirects, classified UNKNOWN, not retried, as the OpenAI
// adapter's (TestRedirectLoopIsNotRetried there).
func TestRedirectLoopIsNotRetried(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.RequestURI(), http.StatusFound)
	})
	m := newTestModel(t, f)
	r, err := retry.New(m, retry.Config{MaxAttempts: 3, DisableBudget: true},
		retry.WithSleep(func(ctx context.Context, d time.Duration) error { return ctx.Err() }))
	if err != nil {
		t.Fatal(err)
	}
	for _, stream := range []bool{false, true} {
		before := f.count()
		_, errs := collect(testCtx(t), m, userText("hi"), stream)
		perCall := f.count() - before
		if len(errs) != 1 {
			t.Fatalf("stream=%v: errors = %v, want one", stream, errs)
		}
		var pe *model.ProviderError
		if c := taxonomy.ClassifyError(errs[0]); c != taxonomy.Unknown || !errors.Is(errs[0], ErrTooManyRedirects) ||
			!errors.As(errs[0], &pe) || pe.StatusCode != http.StatusFound {
			t.Errorf("stream=%v: redirect loop classified %s: %v; want UNKNOWN, a *model.ProviderError with status 302 around ErrTooManyRedirects", stream, c, errs[0])
		}
		before = f.count()
		if _, errs := collect(testCtx(t), r, userText("hi"), stream); len(errs) != 1 || f.count()-before != perCall {
			t.Errorf("stream=%v through the retry decorator: %d requests, errors %v; want %d (one attempt, not retried)", stream, f.count()-before, errs, perCall)
		}
	}
}
