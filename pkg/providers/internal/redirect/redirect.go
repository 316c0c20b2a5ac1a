// Package redirect keeps a provider's API key on the origin it was
// configured for: an http.Client CheckRedirect that refuses a redirect
// leaving the first request's origin (scheme, host name and port).
//
// net/http forwards a custom key header (Gemini's x-goog-api-key) on every
// redirect, and Authorization (OpenAI's bearer token) on every redirect to
// the same host name: so to another port of that host (another service,
// another tenant's listener on a shared proxy host) and from https to plain
// http, in clear text. A configured endpoint (a proxy, a regional endpoint,
// a local server) that redirects to another origin would have the key sent
// there. Refusing, rather than following without the key, because a request
// without its key fails anyway (401/403, paged as AUTH, blaming the key
// instead of the endpoint), and a model endpoint has no reason to send a
// worker elsewhere: the endpoint is misconfigured or not to be trusted,
// which a person has to look at. The refusal is a *model.ProviderError with
// the redirect's 3xx status around ErrRefused, which pkg/taxonomy classifies
// UNKNOWN: never retried, dead-lettered for review with the raw message,
// never replayed automatically (found in review, twenty-first session: the
// Gemini adapter set no CheckRedirect, and the OpenAI SDK's own origin
// guard refused with a plain *url.Error, classified TRANSPORT, retried and
// replayed for ever).
//
// A redirect chain that reaches the limit of MaxRedirects (an endpoint
// redirecting to itself: a misconfigured proxy or load balancer) is the
// same kind of failure, which no retry fixes: a *model.ProviderError with
// the last redirect's 3xx status around ErrTooManyRedirects, classified
// UNKNOWN as the refusal is (found in review, twenty-fifth session: it was
// a plain error, which net/http's *url.Error made TRANSPORT, retried and
// replayed for ever).
package redirect

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// MaxRedirects is net/http's default redirect limit, which a client with
// its own CheckRedirect has to apply itself.
const MaxRedirects = 10

// ErrRefused is matched by errors.Is when a provider's HTTP client refused
// a redirect that would have sent the API key to another origin (scheme,
// host and port): another host, another port, or from https to plain http.
// The error that carries it is a *model.ProviderError with the redirect's
// HTTP status (3xx).
var ErrRefused = errors.New("redirect refused: it would send the API key to another origin (scheme, host or port)")

// ErrTooManyRedirects is matched by errors.Is when a provider's HTTP client
// stopped following redirects at net/http's default limit (MaxRedirects):
// the endpoint keeps redirecting, a misconfiguration only a person can fix.
// The error that carries it is a *model.ProviderError with the last
// redirect's HTTP status (3xx).
var ErrTooManyRedirects = fmt.Errorf("stopped after %d redirects", MaxRedirects)

// Guard returns c's CheckRedirect for provider (the label of its errors'
// *model.ProviderError): it refuses a redirect leaving the first request's
// origin (SameOrigin) with Refused, and otherwise applies next, the caller's
// own CheckRedirect, or, when next is nil, net/http's default limit of
// MaxRedirects redirects, stopping with TooManyRedirects.
func Guard(provider string, next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) > 0 && !SameOrigin(req.URL, via[0].URL) {
			return Refused(provider, req)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= MaxRedirects {
			return TooManyRedirects(provider, req)
		}
		return nil
	}
}

// Client returns a copy of c (a new client when nil, which behaves as
// http.DefaultClient) whose CheckRedirect is Guard(provider, c's own).
func Client(provider string, c *http.Client) *http.Client {
	var out http.Client
	if c != nil {
		out = *c
	}
	out.CheckRedirect = Guard(provider, out.CheckRedirect)
	return &out
}

// Refused is the error for a refused redirect req: the redirect response's
// status (what the taxonomy reads) around ErrRefused. The target URL is not
// repeated: http.Client's *url.Error around this error names it, and the
// adapters redact their API key from that text.
func Refused(provider string, req *http.Request) error {
	return redirectError(provider, req, ErrRefused)
}

// TooManyRedirects is the error for a redirect req beyond the limit of
// MaxRedirects: the redirect response's status (3xx, what the taxonomy
// reads: UNKNOWN, not retried) around ErrTooManyRedirects.
func TooManyRedirects(provider string, req *http.Request) error {
	return redirectError(provider, req, ErrTooManyRedirects)
}

// redirectError is a *model.ProviderError for provider around sentinel,
// with the status of the redirect response that led to req, if any.
func redirectError(provider string, req *http.Request, sentinel error) error {
	pe := &model.ProviderError{Provider: provider, Message: sentinel.Error(), Err: sentinel}
	if req != nil && req.Response != nil {
		pe.StatusCode = req.Response.StatusCode
		pe.Status = http.StatusText(req.Response.StatusCode)
	}
	return pe
}

// SameOrigin reports whether a and b have the same origin: scheme and host
// name compared case-insensitively, ports compared with a scheme's default
// port filled in (80 for http, 443 for https), so that
// "https://example.com" and "https://example.com:443" are one origin. A nil
// URL has no origin.
func SameOrigin(a, b *url.URL) bool {
	return a != nil && b != nil &&
		strings.EqualFold(a.Scheme, b.Scheme) &&
		strings.EqualFold(a.Hostname(), b.Hostname()) &&
		originPort(a) == originPort(b)
}

// originPort is u's port, or its scheme's default port when u has none.
func originPort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}
