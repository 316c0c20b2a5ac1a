package openai

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/retry"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Regression (found in review, twenty-first session): a redirect to another
// origin is refused as UNKNOWN (never retried, never replayed automatically),
// not as a retryable TRANSPORT failure, and never reaches the other origin.
//
// A configured endpoint that redirects to another origin (here another port
// of the same host, which net/http would send the bearer token to) is
// refused by openai-go's origin guard, so the key is safe. But the refusal
// reaches the taxonomy as a plain *url.Error and is classified TRANSPORT:
// retried by the decorator, degraded, dead-lettered and replayed
// automatically, for ever, although no retry can fix a misconfigured or
// untrusted endpoint. The Gemini adapter documents the same case as
// "the endpoint is misconfigured or not to be trusted, which a person has
// to look at" (ErrRedirectRefused, UNKNOWN: never retried, never replayed
// automatically).
func TestRedirectToOtherOriginIsNotRetried(t *testing.T) {
	var otherHits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		jsonHandler(200, textOK)(w, r)
	}))
	t.Cleanup(other.Close)
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/v1/chat/completions", http.StatusTemporaryRedirect)
	})
	m := newTestModel(t, f)

	for _, stream := range []bool{false, true} {
		_, errs := collect(testCtx(t), m, userText("hi"), stream)
		if len(errs) != 1 {
			t.Fatalf("stream=%v: errors %v, want one", stream, errs)
		}
		c := taxonomy.ClassifyError(errs[0])
		if p := taxonomy.PolicyFor(c); p.Retryable || p.AutoReplay {
			t.Errorf("stream=%v: redirect to another origin refused: class %s (retryable %v, auto-replay %v), want a class that is neither, as Gemini's UNKNOWN (error: %v)",
				stream, c, p.Retryable, p.AutoReplay, errs[0])
		}
	}
	if n := otherHits.Load(); n != 0 {
		t.Fatalf("the other origin received %d requests", n)
	}

	before := f.count()
	r, err := retry.New(m, retry.Config{MaxAttempts: 3, DisableBudget: true},
		retry.WithSleep(func(ctx context.Context, d time.Duration) error { return ctx.Err() }))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = collect(testCtx(t), r, userText("hi"), false)
	if got := f.count() - before; got != 1 {
		t.Errorf("through the retry decorator the redirecting endpoint was called %d times, want 1 (a refused redirect is not transient)", got)
	}
}
