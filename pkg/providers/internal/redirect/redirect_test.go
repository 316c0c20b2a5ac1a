package redirect

import (
	"errors"
	"net/http"
	"net/url"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestSameOrigin pins what an origin is: scheme, host name and port, with
// default ports filled in and case ignored.
func TestSameOrigin(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"https://example.com/v1", "https://example.com:443/v2", true},
		{"http://EXAMPLE.com/", "HTTP://example.com:80/x", true},
		{"https://example.com/", "http://example.com/", false},
		{"http://127.0.0.1:8000/", "http://127.0.0.1:8001/", false},
		{"https://example.com/", "https://evil.example.com/", false},
		{"https://example.com/", "https://example.com.evil/", false},
	} {
		if got := SameOrigin(mustURL(t, tc.a), mustURL(t, tc.b)); got != tc.want {
			t.Errorf("SameOrigin(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
	if SameOrigin(nil, mustURL(t, "https://example.com/")) {
		t.Error("a nil URL has no origin")
	}
}

// TestGuard checks the refusal's error (the 3xx status around ErrRefused),
// the caller's CheckRedirect chained for a same-origin redirect, and the
// default limit without one.
func TestGuard(t *testing.T) {
	first := &http.Request{URL: mustURL(t, "http://127.0.0.1:8000/v1/chat")}
	other := &http.Request{URL: mustURL(t, "http://127.0.0.1:9000/v1/chat"), Response: &http.Response{StatusCode: http.StatusTemporaryRedirect}}
	err := Guard("p", nil)(other, []*http.Request{first})
	var pe *model.ProviderError
	if !errors.Is(err, ErrRefused) || !errors.As(err, &pe) || pe.StatusCode != http.StatusTemporaryRedirect || pe.Provider != "p" {
		t.Fatalf("redirect to another port: %v (%+v), want a ProviderError with status 307 around ErrRefused", err, pe)
	}

	same := &http.Request{URL: mustURL(t, "http://127.0.0.1:8000/v2/chat")}
	errMine := errors.New("caller says no")
	if err := Guard("p", func(*http.Request, []*http.Request) error { return errMine })(same, []*http.Request{first}); !errors.Is(err, errMine) {
		t.Errorf("same-origin redirect with a caller's CheckRedirect: %v, want the caller's error", err)
	}
	if err := Guard("p", nil)(same, []*http.Request{first}); err != nil {
		t.Errorf("same-origin redirect: %v, want it followed", err)
	}
	via := make([]*http.Request, MaxRedirects)
	for i := range via {
		via[i] = first
	}
	same.Response = &http.Response{StatusCode: http.StatusFound}
	pe = nil
	if err := Guard("p", nil)(same, via); !errors.Is(err, ErrTooManyRedirects) || !errors.As(err, &pe) || pe.StatusCode != http.StatusFound || pe.Provider != "p" {
		t.Errorf("redirect number %d: %v (%+v), want net/http's limit: a ProviderError with status 302 around ErrTooManyRedirects", MaxRedirects+1, err, pe)
	}
	if c := Client("p", nil); c.CheckRedirect == nil {
		t.Error("Client(nil) has no CheckRedirect")
	}
}
