package gemini

import (
	"errors"
	"net/http"
	"strings"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// The API key travels in the custom header x-goog-api-key, which net/http
// forwards on every redirect (it drops only Authorization, Cookie and
// WWW-Authenticate, and only when the host changes). A configured endpoint
// (Config.BaseURL: a proxy, a regional endpoint) that redirects to another
// host, or from https to http, would have the key sent there, in clear text
// in the downgrade case. The adapter's HTTP client refuses such a redirect
// (found in review, twenty-first session). Refusing, rather than following
// without the header, because a request without its key fails anyway
// (401/403, paged as AUTH, blaming the key instead of the endpoint), and a
// Gemini endpoint has no reason to send a worker elsewhere: the endpoint is
// misconfigured or not to be trusted, which a person has to look at.

// maxRedirects is net/http's default redirect limit, which a client with
// its own CheckRedirect has to apply itself.
const maxRedirects = 10

// ErrRedirectRefused is matched by errors.Is when the adapter's HTTP client
// refused a redirect that would have sent the API key to another host name
// or from https to plain http. The error that carries it is a
// *model.ProviderError with the redirect's HTTP status (3xx), which
// pkg/taxonomy classifies UNKNOWN: never retried, dead-lettered for review
// with the raw message, never replayed automatically.
var ErrRedirectRefused = errors.New("redirect refused: it would send the API key to another host or over plain http")

// checkRedirect returns an http.Client CheckRedirect that refuses a
// redirect leaving the first request's host name (compared without the
// port, case-insensitively, as net/http compares hosts for the headers it
// drops) or going from https to http, and otherwise applies next, the
// caller's CheckRedirect, or net/http's default limit of ten redirects
// when next is nil.
func checkRedirect(next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) > 0 {
			first := via[0].URL
			if !strings.EqualFold(req.URL.Hostname(), first.Hostname()) ||
				(strings.EqualFold(first.Scheme, "https") && !strings.EqualFold(req.URL.Scheme, "https")) {
				return redirectRefused(req)
			}
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
