package gemini

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// The API key travels in the custom header x-goog-api-key, which net/http
// forwards on every redirect (it drops only Authorization, Cookie and
// WWW-Authenticate, and only when the host changes). A configured endpoint
// (Config.BaseURL: a proxy, a regional endpoint) that redirects to another
// origin (another host, another port of the same host: another service or
// another tenant's listener on a shared proxy host, or from https to http)
// would have the key sent there, in clear text in the downgrade case. The
// adapter's HTTP client refuses a redirect that leaves the first request's
// origin, its scheme, host and port (found in review, twenty-first
// session). Refusing, rather than following
// without the header, because a request without its key fails anyway
// (401/403, paged as AUTH, blaming the key instead of the endpoint), and a
// Gemini endpoint has no reason to send a worker elsewhere: the endpoint is
// misconfigured or not to be trusted, which a person has to look at.

// maxRedirects is net/http's default redirect limit, which a client with
// its own CheckRedirect has to apply itself.
const maxRedirects = 10

// ErrRedirectRefused is matched by errors.Is when the adapter's HTTP client
// refused a redirect that would have sent the API key to another origin
// (scheme, host and port): another host, another port, or from https to
// plain http. The error that carries it is a
// *model.ProviderError with the redirect's HTTP status (3xx), which
// pkg/taxonomy classifies UNKNOWN: never retried, dead-lettered for review
// with the raw message, never replayed automatically.
var ErrRedirectRefused = errors.New("redirect refused: it would send the API key to another origin (scheme, host or port)")

// checkRedirect returns an http.Client CheckRedirect that refuses a
// redirect leaving the first request's origin (sameOrigin: scheme, host
// name and port; so also one from https to http), and otherwise applies
// next, the caller's CheckRedirect, or net/http's default limit of ten
// redirects when next is nil.
func checkRedirect(next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) > 0 && !sameOrigin(req.URL, via[0].URL) {
			return redirectRefused(req)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= maxRedirects {
			return errors.New("gemini: stopped after 10 redirects")
		}
		return nil
	}
}

// redirectRefused is the error for a refused redirect: the redirect
// response's status (what the taxonomy reads) around ErrRedirectRefused.
// The target URL is not repeated: http.Client's *url.Error around this
// error names it, and the adapter redacts the API key from that text.
func redirectRefused(req *http.Request) error {
	pe := &model.ProviderError{Provider: ProviderName, Message: ErrRedirectRefused.Error(), Err: ErrRedirectRefused}
	if req.Response != nil {
		pe.StatusCode = req.Response.StatusCode
		pe.Status = http.StatusText(req.Response.StatusCode)
	}
	return pe
}

// sameOrigin reports whether a and b have the same origin: scheme and host
// name compared case-insensitively, ports compared with a scheme's default
// port filled in (80 for http, 443 for https), so that
// "https://example.com" and "https://example.com:443" are one origin.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) &&
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
