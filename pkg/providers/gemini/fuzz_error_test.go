package gemini

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/agentfleet/agentfleet/pkg/retry"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// geminiErrorReply is what the fake server answers in
// FuzzGeminiErrorResponse.
type geminiErrorReply struct {
	status int
	body   []byte
}

// FuzzGeminiErrorResponse: an HTTP error response of any status (400 to
// 599) and body gives exactly one error, plain and streaming, classified
// by its HTTP status as ClassifyHTTPStatus says (a 429 may be
// QUOTA_EXHAUSTED): whatever the body holds, a 503 is a server error to
// retry, never UNKNOWN (never retried). A hint ServerHint finds in it is
// positive.
func FuzzGeminiErrorResponse(f *testing.F) {
	for _, tc := range apiErrorCases {
		f.Add(uint16(tc.status), []byte(tc.body))
	}
	f.Add(uint16(503), []byte(``))
	f.Add(uint16(500), []byte(`{}`))
	f.Add(uint16(429), []byte(`{"error": {"code": 429, "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": {"seconds": "1e300"}}]}}`))
	f.Add(uint16(400), []byte(`{"error": {"code": "x"}}`))
	f.Add(uint16(502), []byte(`[1, 2]`))
	var current atomic.Pointer[geminiErrorReply]
	current.Store(&geminiErrorReply{status: 500})
	fake := newFake(&testing.T{}, func(w http.ResponseWriter, r *http.Request) {
		rep := current.Load()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.status)
		_, _ = w.Write(rep.body)
	})
	f.Cleanup(fake.srv.Close)
	m, err := New(context.Background(), Config{APIKey: "k", Model: "gemini-2.5-flash", BaseURL: fake.srv.URL})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, status uint16, body []byte) {
		rep := &geminiErrorReply{status: 400 + int(status)%200, body: body}
		current.Store(rep)
		for _, stream := range []bool{false, true} {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			resps, errs := collect(ctx, m, userText("hi"), stream)
			cancel()
			if len(resps) != 0 || len(errs) != 1 {
				t.Fatalf("status %d stream=%v: %d responses, %d errors (%v); want one error", rep.status, stream, len(resps), len(errs), errs)
			}
			got := taxonomy.ClassifyError(errs[0])
			// A body whose own error code is an HTTP error status is the
			// API's statement and may be read instead of the response's
			// status; any other code (none, a stray number) is not.
			bodyOK := false
			var ae genai.APIError
			if errors.As(errs[0], &ae) && ae.Code >= 400 && ae.Code <= 599 {
				bodyOK = got == taxonomy.ClassifyHTTPStatus(ae.Code, false) || got == taxonomy.ClassifyHTTPStatus(ae.Code, true)
			}
			// A body whose details say the API key was refused is AUTH
			// whatever the status (a structured field, not message text).
			keyRefused := false
			if errors.As(errs[0], &ae) {
				for _, d := range ae.Details {
					if d["@type"] == taxonomy.TypeErrorInfo && (d["reason"] == "API_KEY_INVALID" || d["reason"] == "API_KEY_EXPIRED") {
						keyRefused = true
					}
				}
			}
			if keyRefused {
				bodyOK = got == taxonomy.Auth
			}
			if !bodyOK && got != taxonomy.ClassifyHTTPStatus(rep.status, false) && got != taxonomy.ClassifyHTTPStatus(rep.status, true) {
				t.Fatalf("HTTP %d stream=%v body %q: class %s, want %s (err %v)", rep.status, stream, body, got, taxonomy.ClassifyHTTPStatus(rep.status, false), errs[0])
			}
			if d, ok := retry.ServerHint(errs[0], time.Now()); ok && d <= 0 {
				t.Fatalf("non-positive hint %v", d)
			}
		}
	})
}
