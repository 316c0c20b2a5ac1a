package openai

import (
	"github.com/agentfleet/agentfleet/pkg/providers/internal/redirect"
)

// The API key travels as a bearer token in Authorization, which net/http
// forwards on a redirect to the same host name: to another port of that
// host (another service, another tenant's listener on a shared proxy host)
// and from https to plain http, in clear text. openai-go's own origin guard
// (a transport that refuses any request leaving the configured base URL's
// origin) keeps the key home, but its refusal is a plain *url.Error, which
// pkg/taxonomy classifies TRANSPORT: retried by the decorator, degraded,
// dead-lettered and replayed automatically, for ever, although no retry can
// fix a misconfigured or untrusted endpoint (found in review,
// twenty-first session). The adapter's HTTP client refuses such a redirect
// itself, before the SDK's guard sees it, as the Gemini adapter does
// (pkg/providers/internal/redirect).

// ErrRedirectRefused is matched by errors.Is when the adapter's HTTP client
// refused a redirect that would have sent the API key to another origin
// (scheme, host and port): another host, another port, or from https to
// plain http. The error that carries it is a *model.ProviderError with the
// redirect's HTTP status (3xx), which pkg/taxonomy classifies UNKNOWN:
// never retried, dead-lettered for review with the raw message, never
// replayed automatically. It is the sentinel of the Gemini adapter's
// refusal too (gemini.ErrRedirectRefused).
var ErrRedirectRefused = redirect.ErrRefused

// ErrTooManyRedirects is matched by errors.Is when the adapter's HTTP
// client stopped following redirects at net/http's default limit of ten (an
// endpoint redirecting to itself: a misconfigured proxy or load balancer;
// a Config.HTTPClient's own CheckRedirect sets its own limit). The error
// that carries it is a *model.ProviderError with the last redirect's HTTP
// status (3xx), which pkg/taxonomy classifies UNKNOWN, as it does the
// refusal: no retry fixes the endpoint (found in review, twenty-fifth
// session: it was TRANSPORT, retried and replayed for ever). It is the
// Gemini adapter's sentinel too (gemini.ErrTooManyRedirects).
var ErrTooManyRedirects = redirect.ErrTooManyRedirects
