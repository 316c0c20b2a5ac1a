package tool_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

func TestSanitizeString(t *testing.T) {
	cases := []struct {
		name, in string
		want     string // exact, or "" to use mustNot
		mustNot  []string
	}{
		{name: "plain", in: "order service timed out", want: "order service timed out"},
		{name: "first line only", in: "bad thing\nsecond line secret", want: "bad thing"},
		{name: "go stack", in: "panic: runtime error\ngoroutine 1 [running]:", want: "[redacted]"},
		{name: "go frame", in: "failed at /srv/app/orders.go:42", want: "[redacted]"},
		{name: "java frame", in: "boom at com.acme.Orders.find(Orders.java:12)", want: "[redacted]"},
		{name: "sql", in: "pq: duplicate key", want: "[redacted]"},
		{name: "select", in: "query SELECT id FROM orders failed", want: "[redacted]"},
		{name: "url", in: "GET https://orders.internal.acme.com/v1/x failed", mustNot: []string{"acme", "https"}},
		{name: "host port", in: "dial tcp 10.0.3.7:5432: connection refused", mustNot: []string{"10.0.3.7", "5432"}},
		{name: "internal host", in: "db-primary.svc unreachable", mustNot: []string{"db-primary"}},
		// Regression (found in review of this session's fix, twenty-third
		// session): a single-label host after "host" (aiohttp's text, passed
		// on by an LLM proxy) was kept.
		{name: "single-label host after host", in: "Cannot connect to host vllm-backend:8000 ssl:default", want: "Cannot connect to host [redacted] ssl:default"},
		{name: "host header", in: "bad gateway (Host: orders-api:8080)", mustNot: []string{"orders-api", "8080"}},
		{name: "control chars", in: "a\x00b\x1bc", want: "abc"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := tool.SanitizeString(c.in)
			if c.want != "" && got != c.want {
				t.Fatalf("SanitizeString(%q) = %q, want %q", c.in, got, c.want)
			}
			for _, s := range c.mustNot {
				if strings.Contains(got, s) {
					t.Fatalf("SanitizeString(%q) = %q still contains %q", c.in, got, s)
				}
			}
		})
	}
	long := strings.Repeat("é", 500)
	if got := tool.SanitizeString(long); utf8.RuneCountInString(got) != tool.MaxErrorStringLen {
		t.Fatalf("length cap: got %d runes", utf8.RuneCountInString(got))
	}
}

func TestSanitizeOnlyTouchesErrorMaps(t *testing.T) {
	ok := map[string]any{"status": "ok", "note": "line1\nline2"}
	if got := tool.Sanitize(ok); got["note"] != "line1\nline2" {
		t.Fatalf("ok map was changed: %v", got)
	}
	em := tool.Error("db", false, "x\ny")
	em["nested"] = map[string]any{"trace": "goroutine 7 [running]"}
	em["list"] = []any{"a\nb", 3.0}
	got := tool.Sanitize(em)
	if got["hint"] != "x" || got["nested"].(map[string]any)["trace"] != "[redacted]" || got["list"].([]any)[0] != "a" {
		t.Fatalf("sanitised = %v", got)
	}
	if em["hint"] != "x\ny" {
		t.Fatal("Sanitize modified its input")
	}
}

func TestErrorMapHelpers(t *testing.T) {
	m := tool.Error("rate_limited", true, "")
	if _, ok := m["hint"]; ok || !tool.IsErrorMap(m) || !tool.IsRetryable(m) {
		t.Fatalf("Error() = %v", m)
	}
	if tool.IsErrorMap(tool.OK(nil)) || tool.IsRetryable(tool.OK(map[string]any{"retryable": true})) {
		t.Fatal("ok map classified as error")
	}
	if !tool.IsErrorMap(tool.NotFound("check id")) || tool.IsRetryable(tool.NotFound("")) {
		t.Fatal("not_found map")
	}
	if !tool.IsErrorMap(map[string]any{"reason": "x"}) {
		t.Fatal("a reason without status is an error map")
	}
}

func FuzzSanitizeString(f *testing.F) {
	for _, s := range []string{"", "ok", "goroutine 1 [running]", "a\nb", "http://x.y:80/z", "\xff\xfe", strings.Repeat("x", 1000)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := tool.SanitizeString(s)
		if strings.ContainsAny(got, "\r\n") {
			t.Fatalf("multi-line output %q", got)
		}
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8 %q", got)
		}
		if utf8.RuneCountInString(got) > tool.MaxErrorStringLen {
			t.Fatalf("too long: %d runes", utf8.RuneCountInString(got))
		}
	})
}
