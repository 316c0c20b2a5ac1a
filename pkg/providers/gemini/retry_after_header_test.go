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

// Regression (found in review, seventeenth session): the retry decorator honours server hints (Retry-After,
// retry-after-ms, RetryInfo, ProviderError.RetryAfter), and the OpenAI
// adapter carries Retry-After even for an undecodable body. The Gemini
// adapter drops the response headers: a 429 (or 503) with a Retry-After
// header but no RetryInfo detail (a proxy or gateway in front of Gemini,
// which Config.BaseURL supports) is retried after the plain jittered
// backoff (0-500ms) instead of the seconds the server asked for, so the
// retry is refused again and the call fails.
func TestRetryAfterHeaderHonoured(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).", "status": "RESOURCE_EXHAUSTED"}}`)
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
	if waits[0] < 7*time.Second {
		t.Errorf("waited %s before retrying a 429 with Retry-After: 7; want at least 7s", waits[0])
	}
}
