package openai

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/retry"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// errorReply is what the fake server answers in FuzzOpenAIErrorResponse.
type errorReply struct {
	status            int
	body              []byte
	retryAfter, retMs string
}

// headerSafe drops the bytes a server cannot send in a header value.
func headerSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r >= 0x7f {
			return -1
		}
		return r
	}, s)
}

// FuzzOpenAIErrorResponse: an HTTP error response of any status (400 to
// 599), body and retry headers gives exactly one error, plain and
// streaming; it is classified by its status (as ClassifyHTTPStatus says;
// a 429 may be QUOTA_EXHAUSTED), or, for a Google error body with
// typed details ("@type"), as the Gemini adapter's genai.APIError would be, and the server's Retry-After /
// retry-after-ms hint reaches retry.ServerHint through the adapter's error
// whether the SDK could decode the body or not.
func FuzzOpenAIErrorResponse(f *testing.F) {
	for _, tc := range apiErrorCases {
		f.Add(uint16(tc.status), []byte(tc.body), "", "")
	}
	f.Add(uint16(429), []byte(`{"error": "slow down"}`), "3", "")
	f.Add(uint16(503), []byte(`<html>Service Unavailable</html>`), "Wed, 21 Oct 2099 07:28:00 GMT", "")
	f.Add(uint16(429), []byte(`{"error": {"code": "insufficient_quota", "type": "insufficient_quota"}}`), "", "250")
	f.Add(uint16(500), []byte(``), "1e400", "NaN")
	f.Add(uint16(404), []byte(`{"error": null}`), "-1", "1e-9")
	f.Add(uint16(502), []byte(`{"error": {"message": 5, "code": 7}}`), "0.5", "")
	f.Add(uint16(400), []byte(invalidPrompt400), "", "")
	f.Add(uint16(500), []byte(`[{"error": {"code": 500, "message": "x", "status": "INTERNAL", "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]}}]`), "", "")
	f.Add(uint16(429), []byte(`{"error": {"code": 429, "message": "x", "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"}, 5]}}`), "", "")
	f.Add(uint16(429), []byte(`{"error": {"message": "x", "code": "insufficient_quota", "details": [{"reason": "billing"}]}}`), "", "")
	var current atomic.Pointer[errorReply]
	current.Store(&errorReply{status: 500})
	fake := newFake(&testing.T{}, func(w http.ResponseWriter, r *http.Request) {
		rep := current.Load()
		if rep.retryAfter != "" {
			w.Header().Set("Retry-After", rep.retryAfter)
		}
		if rep.retMs != "" {
			w.Header().Set("Retry-After-Ms", rep.retMs)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.status)
		_, _ = w.Write(rep.body)
	})
	f.Cleanup(fake.srv.Close)
	m, err := New(Config{APIKey: "k", Model: "gpt-4.1-mini", BaseURL: fake.srv.URL + "/v1"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, status uint16, body []byte, retryAfter, retMs string) {
		rep := &errorReply{status: 400 + int(status)%200, body: body, retryAfter: headerSafe(retryAfter), retMs: headerSafe(retMs)}
		current.Store(rep)
		h := http.Header{}
		if rep.retryAfter != "" {
			h.Set("Retry-After", rep.retryAfter)
		}
		if rep.retMs != "" {
			h.Set("Retry-After-Ms", rep.retMs)
		}
		for _, stream := range []bool{false, true} {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			resps, errs := collect(ctx, m, userText("hi"), stream)
			cancel()
			if len(errs) == 0 && len(resps) == 1 && resps[0].ErrorCode == model.FinishReasonProhibitedContent && resps[0].ErrorMessage == CodeInvalidPrompt {
				// A flagged prompt is answered in-band (blockedPrompt).
				if class, _ := taxonomy.ClassifyResponse(resps[0]); class != taxonomy.PromptBlocked {
					t.Fatalf("status %d stream=%v: a flagged prompt classified %s", rep.status, stream, class)
				}
				continue
			}
			if len(resps) != 0 || len(errs) != 1 {
				t.Fatalf("status %d stream=%v: %d responses, %d errors (%v); want one error", rep.status, stream, len(resps), len(errs), errs)
			}
			got := taxonomy.ClassifyError(errs[0])
			if g, ok := bodyGoogleError(&http.Response{Body: io.NopCloser(bytes.NewReader(body))}, rep.status); ok {
				// A Google error body's details classify as the Gemini
				// adapter's error would.
				if want := taxonomy.ClassifyError(g); got != want {
					t.Fatalf("status %d stream=%v body %q: class %s, want %s as the Gemini error's (err %v)", rep.status, stream, body, got, want, errs[0])
				}
			} else if got != taxonomy.ClassifyHTTPStatus(rep.status, false) && got != taxonomy.ClassifyHTTPStatus(rep.status, true) {
				t.Fatalf("status %d stream=%v body %q: class %s, want %s (err %v)", rep.status, stream, body, got, taxonomy.ClassifyHTTPStatus(rep.status, false), errs[0])
			}
			now := time.Now()
			want, wantOK := retry.HeaderHint(h, now)
			d, ok := retry.ServerHint(errs[0], now)
			if ok && d <= 0 {
				t.Fatalf("non-positive hint %v", d)
			}
			if wantOK && (!ok || d-want > 2*time.Second || want-d > 2*time.Second) {
				t.Fatalf("status %d stream=%v headers %v body %q: hint %v, %v; the server said %v", rep.status, stream, h, body, d, ok, want)
			}
		}
	})
}
