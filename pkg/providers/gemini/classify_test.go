package gemini

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"google.golang.org/genai"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Cross-check: every wire case of this adapter lands in the taxonomy class
// the design expects. A new wire case without an entry here fails.

var wantThrownClass = map[string]taxonomy.Class{
	"rate limited with RetryInfo": taxonomy.RateLimited,
	"quota per day":               taxonomy.QuotaExhausted,
	"unavailable":                 taxonomy.Server,
	"internal":                    taxonomy.Server,
	"not found":                   taxonomy.NotFound,
	"unauthenticated":             taxonomy.Auth,
	"permission denied":           taxonomy.Auth,
	"bad request":                 taxonomy.BadRequest,
	"api key invalid":             taxonomy.Auth,
	"html 502 from a proxy":       taxonomy.Server,
}

func TestTaxonomyThrown(t *testing.T) {
	for _, tc := range apiErrorCases {
		want, ok := wantThrownClass[tc.name]
		if !ok {
			t.Errorf("wire case %q has no expected class", tc.name)
			continue
		}
		for _, stream := range []bool{false, true} {
			f := newFake(t, jsonHandler(tc.status, tc.body))
			_, errs := collect(testCtx(t), newTestModel(t, f), userText("hi"), stream)
			if len(errs) != 1 {
				t.Fatalf("%s: errs = %v", tc.name, errs)
			}
			if got := taxonomy.ClassifyError(errs[0]); got != want {
				t.Errorf("%s (stream=%v): class %s, want %s (err %v)", tc.name, stream, got, want, errs[0])
			}
		}
	}

	other := []struct {
		name   string
		events []string
		abort  bool
		want   taxonomy.Class
	}{
		{"stream dropped mid-way", []string{chunkText("Refunding")}, true, taxonomy.Transport},
		{"stream ended without finish", []string{chunkText("half")}, false, taxonomy.Transport},
		{"error event mid-stream", []string{chunkText("x"), `{"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}`}, false, taxonomy.Server},
	}
	for _, tc := range other {
		h := sseHandler(tc.events...)
		if tc.abort {
			h = abortHandler(tc.events...)
		}
		f := newFake(t, h)
		_, errs := collect(testCtx(t), newTestModel(t, f), userText("hi"), true)
		if len(errs) != 1 {
			t.Fatalf("%s: errs = %v", tc.name, errs)
		}
		if got := taxonomy.ClassifyError(errs[0]); got != tc.want {
			t.Errorf("%s: class %s, want %s (err %v)", tc.name, got, tc.want, errs[0])
		}
	}

	f := newFake(t, jsonHandler(200, textOK))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, errs := collect(ctx, newTestModel(t, f), userText("hi"), false)
	if len(errs) != 1 || taxonomy.ClassifyError(errs[0]) != taxonomy.Canceled {
		t.Errorf("canceled call: %v", errs)
	}
}

// wantInBandClass: "" means healthy (ClassifyResponse reports no failure).
var wantInBandClass = map[string]taxonomy.Class{
	"safety stop without content":                       taxonomy.OutputBlocked,
	"safety stop with empty parts and a finish message": taxonomy.OutputBlocked,
	"max tokens with partial text":                      taxonomy.Truncated,
	"max tokens without text":                           taxonomy.Truncated,
	"malformed function call":                           taxonomy.ToolProtocol,
	"blocked prompt":                                    taxonomy.PromptBlocked,
	"blocked prompt, other reason":                      taxonomy.PromptBlocked,
	"no candidates and no block reason":                 taxonomy.Unknown,
	"empty object":                                      taxonomy.Unknown,
	"unknown finish reason kept verbatim":               taxonomy.Unknown,
	"stop without content is not an error code":         "", // finish reason first: STOP is healthy, even empty
	"thought-only content counts as no content":         taxonomy.OutputBlocked,
}

func TestTaxonomyInBand(t *testing.T) {
	for _, tc := range inBandCases {
		want, ok := wantInBandClass[tc.name]
		if !ok {
			t.Errorf("wire case %q has no expected class", tc.name)
			continue
		}
		f := newFake(t, jsonHandler(200, tc.body))
		resp, err := one(t, newTestModel(t, f), userText("hi"))
		if err != nil {
			t.Fatal(err)
		}
		checkClass(t, tc.name, resp, want)
	}
	f := newFake(t, jsonHandler(200, textOK))
	resp, err := one(t, newTestModel(t, f), userText("hi"))
	if err != nil {
		t.Fatal(err)
	}
	checkClass(t, "healthy text", resp, "")
}

func checkClass(t *testing.T, name string, resp *model.Response, want taxonomy.Class) {
	t.Helper()
	got, failed := taxonomy.ClassifyResponse(resp)
	if want == "" {
		if failed {
			t.Errorf("%s: classified %s, want healthy", name, got)
		}
		return
	}
	if !failed || got != want {
		t.Errorf("%s: class %s (failed=%v), want %s (finish=%q code=%q)", name, got, failed, want, resp.FinishReason, resp.ErrorCode)
	}
}

// An error response whose body carries no error code (a load balancer's
// HTML page, `{"error": {}}`, nothing) gives the SDK's APIError Code 0; the
// adapter adds the HTTP status it saw, so a 503 is SERVER (retried,
// replayed) and a 401 AUTH (paged), not UNKNOWN, plain and streaming.
func TestErrorWithoutACodeIsClassifiedByItsHTTPStatus(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		want   taxonomy.Class
	}{
		{503, `{"error": {}}`, taxonomy.Server},
		{502, `<html><body>Bad Gateway</body></html>`, taxonomy.Server},
		{401, ``, taxonomy.Auth},
		{429, `{"error": {"message": "slow down"}}`, taxonomy.RateLimited},
	} {
		fake := newFake(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(tc.status)
			_, _ = w.Write([]byte(tc.body))
		})
		m, err := New(context.Background(), Config{APIKey: "k", Model: "gemini-2.5-flash", BaseURL: fake.srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		for _, stream := range []bool{false, true} {
			_, errs := collect(context.Background(), m, userText("hi"), stream)
			if len(errs) != 1 {
				t.Fatalf("HTTP %d stream=%v: errors %v, want one", tc.status, stream, errs)
			}
			if got := taxonomy.ClassifyError(errs[0]); got != tc.want {
				t.Errorf("HTTP %d %q stream=%v: class %s, want %s (%v)", tc.status, tc.body, stream, got, tc.want, errs[0])
			}
			var gv genai.APIError
			if !errors.As(errs[0], &gv) {
				t.Errorf("HTTP %d: the SDK's APIError is no longer reachable: %v", tc.status, errs[0])
			}
		}
	}
}
