package gemini

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/retry"
)

// Regression (found in review, seventeenth session): TestRetryInfoNotOverriddenByShorterHeader: the Retry-After header
// was added for a 429 "with Retry-After and no RetryInfo". When the body
// does carry Gemini's own google.rpc.RetryInfo, withHTTPStatus still wraps
// the APIError in a *model.ProviderError with the header's RetryAfter, and
// retry.ServerHint reads ProviderError.RetryAfter first: the header (here a
// proxy's 1s) overrides the 8s the API asked for, so the retry is refused
// again. Before the change the retry waited the RetryInfo delay.
func TestRetryInfoNotOverriddenByShorterHeader(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"error": {"code": 429, "message": "Resource has been exhausted.", "status": "RESOURCE_EXHAUSTED",
 "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "8s"}]}}`)
	})
	m := newTestModel(t, f)
	var mu sync.Mutex
	var waits []time.Duration
	r, err := retry.New(m, retry.Config{MaxAttempts: 2, DisableBudget: true},
		retry.WithSleep(func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			waits = append(waits, d)
			mu.Unlock()
			return ctx.Err()
		}),
		retry.WithJitter(func(time.Duration) time.Duration { return 0 }))
	if err != nil {
		t.Fatal(err)
	}
	_, errs := collect(testCtx(t), r, userText("hi"), false)
	if len(errs) != 1 {
		t.Fatalf("errors = %v", errs)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(waits) != 1 {
		t.Fatalf("waits = %v, want one retry", waits)
	}
	if waits[0] < 8*time.Second {
		t.Errorf("waited %s before retrying a 429 whose RetryInfo says 8s (Retry-After header 1s); want at least 8s", waits[0])
	}
}
