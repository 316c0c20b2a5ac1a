package gemini

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/retry"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// cutErrorBodyHandler answers with status and the start of a JSON error
// body, then drops the connection inside the body.
func cutErrorBodyHandler(status int) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"error": {"code": `+strconv.Itoa(status)+`, "message": "The request was refu`)
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		_ = conn.Close()
	}
}

// Regression (found in review, twenty-first session): an HTTP error
// response whose JSON body breaks off mid-read is classified by its
// status, not TRANSPORT.
//
// The SDK builds its genai.APIError from the error response's body; when
// the connection drops inside that body it returns the read error instead
// ("newAPIError: error reading response body: unexpected EOF"), and
// withHTTPStatus passed a non-APIError error on unchanged unless the
// server sent a Retry-After hint. The taxonomy then saw only
// io.ErrUnexpectedEOF: TRANSPORT, retried and replayed automatically,
// although the status had arrived and says what failed: a revoked key
// (401/403, AUTH: page, never retry), a wrong model name (404), a bad
// request (400), a rate limit (429) or the server (5xx).
func TestErrorBodyCutMidReadIsClassifiedByStatus(t *testing.T) {
	cases := []struct {
		status int
		want   taxonomy.Class
	}{
		{http.StatusBadRequest, taxonomy.BadRequest},
		{http.StatusUnauthorized, taxonomy.Auth},
		{http.StatusForbidden, taxonomy.Auth},
		{http.StatusNotFound, taxonomy.NotFound},
		{http.StatusTooManyRequests, taxonomy.RateLimited},
		{http.StatusInternalServerError, taxonomy.Server},
		{http.StatusServiceUnavailable, taxonomy.Server},
	}
	for _, tc := range cases {
		m := newTestModel(t, newFake(t, cutErrorBodyHandler(tc.status)))
		for _, stream := range []bool{false, true} {
			resps, errs := collect(testCtx(t), m, userText("hi"), stream)
			if len(resps) != 0 || len(errs) != 1 {
				t.Fatalf("status %d stream=%v: %d responses, errors %v; want one error", tc.status, stream, len(resps), errs)
			}
			err := errs[0]
			if got := taxonomy.ClassifyError(err); got != tc.want {
				t.Errorf("status %d stream=%v, body cut mid-read: class %s, want %s (error: %v)", tc.status, stream, got, tc.want, err)
			}
			var pe *model.ProviderError
			if !errors.As(err, &pe) || pe.StatusCode != tc.status {
				t.Errorf("status %d stream=%v: error %v carries no *model.ProviderError with the status", tc.status, stream, err)
			}
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("status %d stream=%v: error %v no longer wraps the body's read error", tc.status, stream, err)
			}
		}
	}
}

// Regression (found in review, twenty-first session): a 429 or 5xx whose
// error body breaks off is still retried exactly once by the retry
// decorator, and a 401 is not retried.
//
// TRANSPORT, which the cut error body was, is retried like RATE_LIMITED
// and SERVER; the status now decides the class, and the decorator's
// attempt limit still makes one retry of the one call, and none of an
// AUTH failure.
func TestErrorBodyCutMidReadRetriedByStatus(t *testing.T) {
	for _, tc := range []struct {
		status   int
		requests int32
	}{
		{http.StatusTooManyRequests, 2},
		{http.StatusServiceUnavailable, 2},
		{http.StatusUnauthorized, 1},
	} {
		for _, stream := range []bool{false, true} {
			var n atomic.Int32
			cut := cutErrorBodyHandler(tc.status)
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				n.Add(1)
				cut(w, r)
			})
			r, err := retry.New(newTestModel(t, f), retry.Config{MaxAttempts: 2, DisableBudget: true},
				retry.WithSleep(func(ctx context.Context, d time.Duration) error { return ctx.Err() }))
			if err != nil {
				t.Fatal(err)
			}
			_, errs := collect(testCtx(t), r, userText("hi"), stream)
			if len(errs) != 1 {
				t.Errorf("status %d stream=%v: errors %v, want one", tc.status, stream, errs)
			}
			if got := n.Load(); got != tc.requests {
				t.Errorf("status %d stream=%v, body cut mid-read: %d provider requests through the retry decorator (MaxAttempts 2), want %d",
					tc.status, stream, got, tc.requests)
			}
		}
	}
}
