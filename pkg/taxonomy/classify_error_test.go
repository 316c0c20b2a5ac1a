package taxonomy_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"google.golang.org/genai"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
	"github.com/agentfleet/agentfleet/pkg/taxonomy/taxonomytest"
)

// statusOnly is a foreign error type that opts in through HTTPStatusCode.
type statusOnly struct{ code int }

func (e statusOnly) Error() string       { return fmt.Sprintf("status %d", e.code) }
func (e statusOnly) HTTPStatusCode() int { return e.code }

func TestClassifyError_SeedTable(t *testing.T) {
	// The thrown cases of the seed's Java test table, with Go's real types.
	cases := []struct {
		name string
		err  error
		want taxonomy.Class
	}{
		{"ApiException(429, RESOURCE_EXHAUSTED)", genai.APIError{Code: 429, Status: "RESOURCE_EXHAUSTED", Message: "quota"}, taxonomy.RateLimited},
		{"RuntimeException(ApiException(503, UNAVAILABLE))", fmt.Errorf("flow: %w", genai.APIError{Code: 503, Status: "UNAVAILABLE", Message: "x"}), taxonomy.Server},
		{"RuntimeException(SocketTimeoutException)", fmt.Errorf("flow: %w", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}), taxonomy.Timeout},
		// A refused Gemini key is 400 INVALID_ARGUMENT with an ErrorInfo
		// reason: AUTH, not BAD_REQUEST; another ErrorInfo reason leaves
		// the 400 a bad request.
		{"ApiException(400, ErrorInfo API_KEY_INVALID)", genai.APIError{Code: 400, Status: "INVALID_ARGUMENT",
			Details: []map[string]any{{"@type": taxonomy.TypeErrorInfo, "reason": "API_KEY_INVALID", "domain": "googleapis.com"}}}, taxonomy.Auth},
		{"ApiException(400, ErrorInfo API_KEY_EXPIRED) in a provider error", &model.ProviderError{Provider: "gemini", StatusCode: 400,
			Err: &genai.APIError{Status: "INVALID_ARGUMENT", Details: []map[string]any{{"@type": taxonomy.TypeErrorInfo, "reason": "API_KEY_EXPIRED"}}}}, taxonomy.Auth},
		{"ApiException(400, ErrorInfo another reason)", genai.APIError{Code: 400, Status: "INVALID_ARGUMENT",
			Details: []map[string]any{{"@type": taxonomy.TypeErrorInfo, "reason": "FIELD_INVALID"}}}, taxonomy.BadRequest},
		{"ApiException(499, CANCELLED)", genai.APIError{Code: 499, Status: "CANCELLED"}, taxonomy.Server},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := taxonomy.ClassifyError(tc.err); got != tc.want {
				t.Fatalf("ClassifyError(%v) = %s, want %s", tc.err, got, tc.want)
			}
		})
	}
}

func TestClassifyError_HTTPStatusMapping(t *testing.T) {
	want := map[int]taxonomy.Class{
		400: taxonomy.BadRequest, 413: taxonomy.BadRequest,
		401: taxonomy.Auth, 403: taxonomy.Auth,
		404: taxonomy.NotFound,
		408: taxonomy.Timeout, 504: taxonomy.Timeout,
		429: taxonomy.RateLimited,
		409: taxonomy.Server, 499: taxonomy.Server, 500: taxonomy.Server, 502: taxonomy.Server, 503: taxonomy.Server, 529: taxonomy.Server,
		501: taxonomy.Server, 599: taxonomy.Server,
		402: taxonomy.Unknown, 418: taxonomy.Unknown, 422: taxonomy.Unknown, 302: taxonomy.Unknown, 600: taxonomy.Unknown,
	}
	for code, class := range want {
		errs := map[string]error{
			"genai value":              genai.APIError{Code: code},
			"genai pointer":            &genai.APIError{Code: code},
			"openai":                   &openai.Error{StatusCode: code},
			"provider":                 &model.ProviderError{Provider: "sim", StatusCode: code},
			"HTTPStatusCode interface": statusOnly{code},
		}
		for kind, err := range errs {
			wrapped := fmt.Errorf("model call: %w", err)
			if got := taxonomy.ClassifyError(wrapped); got != class {
				t.Errorf("%s %d: got %s, want %s", kind, code, got, class)
			}
		}
		if got := taxonomy.ClassifyHTTPStatus(code, false); got != class {
			t.Errorf("ClassifyHTTPStatus(%d) = %s, want %s", code, got, class)
		}
	}
}

func TestClassifyError_RealGeminiSDK(t *testing.T) {
	cases := []struct {
		name    string
		status  int
		api     string
		details []map[string]any
		want    taxonomy.Class
	}{
		{"per-minute quota is rate limiting", 429, "RESOURCE_EXHAUSTED",
			[]map[string]any{taxonomytest.QuotaFailure("GenerateRequestsPerMinutePerProjectPerModel", "generativelanguage.googleapis.com/generate_content_requests"), taxonomytest.RetryInfo("17s")},
			taxonomy.RateLimited},
		{"per-day quota is spent", 429, "RESOURCE_EXHAUSTED",
			[]map[string]any{taxonomytest.QuotaFailure("GenerateRequestsPerDayPerProjectPerModel-FreeTier", "generativelanguage.googleapis.com/generate_content_free_tier_requests"), taxonomytest.RetryInfo("40s")},
			taxonomy.QuotaExhausted},
		{"429 without details", 429, "RESOURCE_EXHAUSTED", nil, taxonomy.RateLimited},
		{"503 unavailable", 503, "UNAVAILABLE", nil, taxonomy.Server},
		{"400 invalid argument", 400, "INVALID_ARGUMENT", nil, taxonomy.BadRequest},
		{"403 permission denied", 403, "PERMISSION_DENIED", nil, taxonomy.Auth},
		{"404 model not found", 404, "NOT_FOUND", nil, taxonomy.NotFound},
		{"504 deadline exceeded", 504, "DEADLINE_EXCEEDED", nil, taxonomy.Timeout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := taxonomytest.GeminiError(t, tc.status, tc.api, "provider says no", tc.details...)
			// The SDK returns APIError by value; make sure the classifier
			// is tested against that shape, also wrapped twice.
			var v genai.APIError
			if !errors.As(err, &v) {
				t.Fatalf("genai returned %T, not a genai.APIError value", err)
			}
			wrapped := fmt.Errorf("agent: %w", fmt.Errorf("gemini adapter: %w", err))
			if got := taxonomy.ClassifyError(wrapped); got != tc.want {
				t.Fatalf("ClassifyError = %s, want %s (err %v)", got, tc.want, err)
			}
		})
	}
}

func TestClassifyError_RealOpenAISDK(t *testing.T) {
	cases := []struct {
		name      string
		status    int
		typ, code string
		want      taxonomy.Class
	}{
		{"rate limit", 429, "requests", "rate_limit_exceeded", taxonomy.RateLimited},
		{"insufficient quota", 429, "insufficient_quota", "insufficient_quota", taxonomy.QuotaExhausted},
		{"invalid key", 401, "invalid_request_error", "invalid_api_key", taxonomy.Auth},
		{"unknown model", 404, "invalid_request_error", "model_not_found", taxonomy.NotFound},
		{"context too long", 400, "invalid_request_error", "context_length_exceeded", taxonomy.BadRequest},
		{"overloaded", 503, "server_error", "", taxonomy.Server},
		{"unprocessable", 422, "invalid_request_error", "", taxonomy.Unknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := taxonomytest.OpenAIError(t, tc.status, nil, tc.typ, tc.code, "provider says no")
			var oe *openai.Error
			if !errors.As(err, &oe) {
				t.Fatalf("openai returned %T, not *openai.Error", err)
			}
			if got := taxonomy.ClassifyError(fmt.Errorf("openai adapter: %w", err)); got != tc.want {
				t.Fatalf("ClassifyError = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestClassifyError_ProviderError(t *testing.T) {
	cases := []struct {
		name string
		err  *model.ProviderError
		want taxonomy.Class
	}{
		{"quota flag on 429", &model.ProviderError{Provider: "sim", StatusCode: 429, QuotaExhausted: true}, taxonomy.QuotaExhausted},
		{"quota flag wins without status", &model.ProviderError{Provider: "sim", QuotaExhausted: true}, taxonomy.QuotaExhausted},
		{"429 is rate limiting", &model.ProviderError{Provider: "sim", StatusCode: 429, RetryAfter: time.Second}, taxonomy.RateLimited},
		{"no status: cause decides (reset)", &model.ProviderError{Provider: "sim", Err: syscall.ECONNRESET}, taxonomy.Transport},
		{"no status: cause decides (deadline)", &model.ProviderError{Provider: "sim", Err: context.DeadlineExceeded}, taxonomy.Timeout},
		{"no status, no cause", &model.ProviderError{Provider: "sim", Message: "connection reset by peer"}, taxonomy.Unknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := taxonomy.ClassifyError(tc.err); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestClassifyError_Order(t *testing.T) {
	budget := &model.CallBudgetError{Limit: 3, Attempted: 4}
	cases := []struct {
		name string
		err  error
		want taxonomy.Class
	}{
		{"call budget beats provider error", errors.Join(genai.APIError{Code: 503}, budget), taxonomy.CallBudget},
		{"call budget wrapped", fmt.Errorf("step 4: %w", budget), taxonomy.CallBudget},
		{"provider status beats its timeout cause", &model.ProviderError{StatusCode: 503, Err: context.DeadlineExceeded}, taxonomy.Server},
		{"timeout beats transport", &net.OpError{Op: "dial", Err: os.ErrDeadlineExceeded}, taxonomy.Timeout},
		{"provider status beats an HTTP/2 error", &model.ProviderError{StatusCode: 503, Err: http2Failure(t, true, rstStream(h2ProtocolError))}, taxonomy.Server},
		{"timeout beats an HTTP/2 error", errors.Join(http2Failure(t, true, rstStream(h2ProtocolError)), context.DeadlineExceeded), taxonomy.Timeout},
		{"an HTTP/2 error code beats the url.Error around it", &url.Error{Op: "Get", URL: "https://llm.example/", Err: http2Failure(t, true, rstStream(h2EnhanceYourCalm))}, taxonomy.RateLimited},
		{"cancellation beats everything", fmt.Errorf("x: %w", errors.Join(budget, genai.APIError{Code: 503}, context.Canceled)), taxonomy.Canceled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := taxonomy.ClassifyError(tc.err); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestClassifyError_NetworkAndContext(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want taxonomy.Class
	}{
		{"deadline", context.DeadlineExceeded, taxonomy.Timeout},
		{"wrapped deadline", fmt.Errorf("call: %w", context.DeadlineExceeded), taxonomy.Timeout},
		{"os deadline", os.ErrDeadlineExceeded, taxonomy.Timeout},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), taxonomy.Transport},
		{"refused", syscall.ECONNREFUSED, taxonomy.Transport},
		{"broken pipe", &os.SyscallError{Syscall: "write", Err: syscall.EPIPE}, taxonomy.Transport},
		{"unexpected EOF", fmt.Errorf("decode: %w", io.ErrUnexpectedEOF), taxonomy.Transport},
		{"op error", &net.OpError{Op: "read", Net: "tcp", Err: errors.New("boom")}, taxonomy.Transport},
		// A misconfigured endpoint pages instead of being retried and replayed.
		{"unknown certificate authority", &url.Error{Op: "Post", URL: "https://llm.example/v1", Err: &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}}, taxonomy.Auth},
		{"certificate for another host", fmt.Errorf("dial: %w", x509.HostnameError{Host: "llm.example"}), taxonomy.Auth},
		{"expired certificate", x509.CertificateInvalidError{Reason: x509.Expired}, taxonomy.Auth},
		{"no such host", &url.Error{Op: "Post", URL: "https://llm.example/v1", Err: &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "llm.example", IsNotFound: true}}}, taxonomy.NotFound},
		{"DNS server failure stays transport", &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "server misbehaving", Name: "llm.example", IsTemporary: true}}, taxonomy.Transport},
		// HTTP/2 failures, as net/http really returns them (http2Failure):
		// classified by the frame's error code, never by the text.
		{"HTTP/2 stream reset (INTERNAL_ERROR)", http2Failure(t, true, rstStream(h2InternalError)), taxonomy.Transport},
		{"HTTP/2 stream refused", fmt.Errorf("read body: %w", http2Failure(t, true, rstStream(h2RefusedStream))), taxonomy.Transport},
		{"HTTP/2 stream reset beside a decode error (Gemini stream)", fmt.Errorf("invalid stream chunk (reading the response: %w)", errors.Join(errors.New("invalid stream chunk"), http2Failure(t, true, rstStream(h2Cancel)))), taxonomy.Transport},
		{"HTTP/2 graceful GOAWAY, then the connection closed", http2Failure(t, true, goAway(h2NoError)), taxonomy.Transport},
		{"HTTP/2 ENHANCE_YOUR_CALM is rate limiting", http2Failure(t, true, goAway(h2EnhanceYourCalm)), taxonomy.RateLimited},
		{"HTTP/2 PROTOCOL_ERROR from the peer is transport (a front end shedding load)", http2Failure(t, true, rstStream(h2ProtocolError)), taxonomy.Transport},
		{"HTTP/2 connection error (a malformed frame) is a bug", http2Failure(t, true, dataOnStreamZero), taxonomy.Unknown},
		{"plain EOF is not classified", io.EOF, taxonomy.Unknown},
		{"text is never read", errors.New("429 Too Many Requests: connection reset timeout"), taxonomy.Unknown},
		{"nil", nil, taxonomy.Unknown},
		{"canceled", context.Canceled, taxonomy.Canceled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := taxonomy.ClassifyError(tc.err); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// TestClassifyError_RealNetworkFailures produces the errors with real
// sockets and a real HTTP client instead of constructing them.
func TestClassifyError_RealNetworkFailures(t *testing.T) {
	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		_, err = http.Get("http://" + addr + "/")
		if err == nil {
			t.Fatal("expected a dial error")
		}
		if got := taxonomy.ClassifyError(err); got != taxonomy.Transport {
			t.Fatalf("got %s for %v, want TRANSPORT", got, err)
		}
	})
	t.Run("untrusted certificate", func(t *testing.T) {
		srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		defer srv.Close()
		_, err := http.Get(srv.URL) // the default client does not trust the test CA
		if err == nil {
			t.Fatal("expected a certificate error")
		}
		if got := taxonomy.ClassifyError(err); got != taxonomy.Auth {
			t.Fatalf("got %s for %v, want AUTH (a misconfigured endpoint pages)", got, err)
		}
	})
	t.Run("read deadline", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetReadDeadline(time.Now().Add(-time.Second))
		_, err = conn.Read(make([]byte, 1))
		if got := taxonomy.ClassifyError(fmt.Errorf("provider: %w", err)); got != taxonomy.Timeout {
			t.Fatalf("got %s for %v, want TIMEOUT", got, err)
		}
	})
	t.Run("server closes mid-response", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "100")
			w.WriteHeader(200)
			_, _ = w.Write([]byte("partial"))
			hj, ok := w.(http.Hijacker)
			if !ok {
				return
			}
			conn, _, err := hj.Hijack()
			if err == nil {
				conn.Close()
			}
		}))
		defer srv.Close()
		resp, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, err = io.ReadAll(resp.Body)
		if err == nil {
			t.Fatal("expected a truncated body error")
		}
		if got := taxonomy.ClassifyError(err); got != taxonomy.Transport {
			t.Fatalf("got %s for %v, want TRANSPORT", got, err)
		}
	})
}

func TestIsCanceled(t *testing.T) {
	if !taxonomy.IsCanceled(fmt.Errorf("x: %w", context.Canceled)) {
		t.Fatal("wrapped context.Canceled not detected")
	}
	if taxonomy.IsCanceled(context.DeadlineExceeded) || taxonomy.IsCanceled(nil) {
		t.Fatal("deadline or nil reported as cancellation")
	}
	if taxonomy.Canceled.Valid() {
		t.Fatal("CANCELED must not be a failure class")
	}
}

func TestFailureFromError_KeepsRawAndStatus(t *testing.T) {
	err := taxonomytest.GeminiError(t, 404, "NOT_FOUND", "models/gemini-1.0-pro is not found")
	f := taxonomy.FailureFromError("gemini-1.0-pro", fmt.Errorf("adapter: %w", err))
	if f.Class != taxonomy.NotFound || f.Channel != taxonomy.ChannelThrown || f.Code != "404" || f.Model != "gemini-1.0-pro" {
		t.Fatalf("unexpected failure %+v", f)
	}
	if want := "models/gemini-1.0-pro is not found"; !strings.Contains(f.Raw, want) {
		t.Fatalf("raw %q does not keep the provider message %q", f.Raw, want)
	}
}
