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

// Regression (found in review, seventeenth session): the Gemini adapter
// dropped the response headers (genai.APIError carries none): a 429 with a
// Retry-After header but no RetryInfo detail (a proxy or gateway in front
// of Gemini, which Config.BaseURL supports) was retried after the plain
// jittered backoff instead of the seconds the server asked for, so the
// retry was refused again. And once the header was read, a proxy's shorter
// header must not shorten the API's own longer RetryInfo (found reviewing
// that fix): the longer wait wins.
func TestRetryAfterHeaderHonoured(t *testing.T) {
	for _, tc := range []struct {
		name, header, body string
		want               time.Duration
	}{
		{"header only", "7", `{"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).", "status": "RESOURCE_EXHAUSTED"}}`, 7 * time.Second},
		{"RetryInfo longer than the header", "1", `{"error": {"code": 429, "message": "Resource has been exhausted.", "status": "RESOURCE_EXHAUSTED",
 "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "8s"}]}}`, 8 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := firstRetryWait(t, tc.header, tc.body); got < tc.want {
				t.Errorf("waited %s before retrying a 429 (Retry-After %s); want at least %s", got, tc.header, tc.want)
			}
		})
	}
}

// firstRetryWait answers every call with a 429 carrying a Retry-After
// header and body, and returns how long the retry decorator waited before
// its one retry.
func firstRetryWait(t *testing.T, header, body string) time.Duration {
	t.Helper()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.Header().Set("Retry-After", header)
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, body)
	})
	var mu sync.Mutex
	var waits []time.Duration
	r, err := retry.New(newTestModel(t, f), retry.Config{MaxAttempts: 2, DisableBudget: true},
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
	if _, errs := collect(testCtx(t), r, userText("hi"), false); len(errs) != 1 {
		t.Fatalf("errors = %v", errs)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(waits) != 1 {
		t.Fatalf("waits = %v, want one retry", waits)
	}
	return waits[0]
}
