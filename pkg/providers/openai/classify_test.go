package openai

import (
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Cross-check: every wire case of this adapter lands in the taxonomy class
// the design expects. A new wire case without an entry here fails.

var wantThrownClass = map[string]taxonomy.Class{
	"rate limited":       taxonomy.RateLimited,
	"insufficient quota": taxonomy.QuotaExhausted,
	"unavailable":        taxonomy.Server,
	"internal":           taxonomy.Server,
	"model not found":    taxonomy.NotFound,
	"invalid api key":    taxonomy.Auth,
	"bad request":        taxonomy.BadRequest,
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
		name    string
		handler func(*testing.T) *fakeOpenAI
		want    taxonomy.Class
	}{
		{"html 502 from a proxy", func(t *testing.T) *fakeOpenAI {
			return newFake(t, jsonHandler(502, "<html>Bad Gateway</html>"))
		}, taxonomy.Server},
		{"string error body 404", func(t *testing.T) *fakeOpenAI {
			return newFake(t, jsonHandler(404, `{"error": "model not found"}`))
		}, taxonomy.NotFound},
		{"stream dropped mid-way", func(t *testing.T) *fakeOpenAI {
			return newFake(t, abortHandler(chunk(`{"content": "Refunding"}`, "null")))
		}, taxonomy.Transport},
		{"stream ended without finish", func(t *testing.T) *fakeOpenAI {
			return newFake(t, sseHandler(chunk(`{"content": "half"}`, "null"), "[DONE]"))
		}, taxonomy.Transport},
		// A mid-stream error event has no HTTP status (the stream answered
		// 200); a known type or code is the stream form of that status
		// (server_error a 500: SERVER, still never retried after the
		// partial output), a free-form one is UNKNOWN.
		{"error event mid-stream", func(t *testing.T) *fakeOpenAI {
			return newFake(t, sseHandler(chunk(`{"content": "x"}`, "null"), `{"error": {"message": "boom", "type": "server_error", "code": "server_error"}}`))
		}, taxonomy.Server},
		{"rate limit event mid-stream", func(t *testing.T) *fakeOpenAI {
			return newFake(t, sseHandler(chunk(`{"content": "x"}`, "null"), `{"error": {"message": "slow down", "type": "requests", "code": "rate_limit_exceeded"}}`))
		}, taxonomy.RateLimited},
		{"free-form error event mid-stream", func(t *testing.T) *fakeOpenAI {
			return newFake(t, sseHandler(chunk(`{"content": "x"}`, "null"), `{"error": {"message": "boom", "type": "weird_error"}}`))
		}, taxonomy.Unknown},
	}
	for _, tc := range other {
		f := tc.handler(t)
		_, errs := collect(testCtx(t), newTestModel(t, f), userText("hi"), true)
		if len(errs) != 1 {
			t.Fatalf("%s: errs = %v", tc.name, errs)
		}
		if got := taxonomy.ClassifyError(errs[0]); got != tc.want {
			t.Errorf("%s: class %s, want %s (err %v)", tc.name, got, tc.want, errs[0])
		}
	}
}

// wantInBandClass: "" means healthy (ClassifyResponse reports no failure).
var wantInBandClass = map[string]taxonomy.Class{
	"content filter without content":      taxonomy.OutputBlocked,
	"length with partial text":            taxonomy.Truncated,
	"length without text":                 taxonomy.Truncated,
	"refusal":                             taxonomy.OutputBlocked,
	"malformed arguments":                 taxonomy.ToolProtocol,
	"arguments not an object":             taxonomy.ToolProtocol,
	"empty arguments are no arguments":    "",
	"legacy function_call":                "",
	"unknown finish reason kept verbatim": taxonomy.Unknown,
	"stop without content":                "", // finish reason first: STOP is healthy, even empty
	"no choices":                          taxonomy.Unknown,
	"empty object":                        taxonomy.Unknown,
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
