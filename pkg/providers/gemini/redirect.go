package gemini

import (
	"net/http"

	"github.com/agentfleet/agentfleet/pkg/providers/internal/redirect"
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
// misconfigured or not to be trusted, which a person has to look at. The
// guard is shared with the OpenAI adapter (pkg/providers/internal/redirect).

// ErrRedirectRefused is matched by errors.Is when the adapter's HTTP client
// refused a redirect that would have sent the API key to another origin
// (scheme, host and port): another host, another port, or from https to
// plain http. The error that carries it is a
// *model.ProviderError with the redirect's HTTP status (3xx), which
// pkg/taxonomy classifies UNKNOWN: never retried, dead-lettered for review
// with the raw message, never replayed automatically. It is the sentinel
// the OpenAI adapter's refusal carries too (openai.ErrRedirectRefused).
var ErrRedirectRefused = redirect.ErrRefused

// ErrTooManyRedirects is matched by errors.Is when the adapter's HTTP
// client stopped following redirects at net/http's default limit of ten (an
// endpoint redirecting to itself: a misconfigured proxy or load balancer).
// The error that carries it is a *model.ProviderError with the last
// redirect's HTTP status (3xx), which pkg/taxonomy classifies UNKNOWN, as it
// does the refusal: no retry fixes the endpoint (found in review,
// twenty-fifth session: it was TRANSPORT, retried and replayed for ever).
// It is the OpenAI adapter's sentinel too (openai.ErrTooManyRedirects).
var ErrTooManyRedirects = redirect.ErrTooManyRedirects

// checkRedirect returns an http.Client CheckRedirect that refuses a
// redirect leaving the first request's origin (scheme, host name and port;
// so also one from https to http) with ErrRedirectRefused, and otherwise
// applies next, the caller's CheckRedirect, or net/http's default limit of
// ten redirects when next is nil, stopping with ErrTooManyRedirects
// (redirect.Guard).
func checkRedirect(next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return redirect.Guard(ProviderName, next)
}
