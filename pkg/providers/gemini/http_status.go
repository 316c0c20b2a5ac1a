package gemini

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"

	"google.golang.org/genai"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// The genai SDK builds its APIError from the response body; a body without
// an error code (`{"error": {}}`, an empty body, a proxy's HTML page) gives
// Code 0, which the taxonomy cannot classify by status, so a 503 from a
// load balancer came out UNKNOWN: never retried, never replayed
// automatically. The adapter records each response's HTTP status through
// its HTTP client's transport and, for such an error, says the status
// itself (withHTTPStatus).

// statusKey is the context key of a call's *statusRecord.
type statusKey struct{}

// statusRecord holds the HTTP status of the last response of one call.
type statusRecord struct{ code atomic.Int32 }

// statusTransport records the status of every response into the request
// context's statusRecord, if any.
type statusTransport struct{ base http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (t statusTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if resp != nil {
		if rec, ok := r.Context().Value(statusKey{}).(*statusRecord); ok {
			rec.code.Store(int32(resp.StatusCode))
		}
	}
	return resp, err
}

// withStatusTransport returns a copy of c (a new client when nil) whose
// transport records response statuses.
func withStatusTransport(c *http.Client) *http.Client {
	var out http.Client
	if c != nil {
		out = *c
	}
	base := out.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	out.Transport = statusTransport{base: base}
	return &out
}

// recordStatus returns ctx carrying a fresh record of the call's HTTP
// status, and the record.
func recordStatus(ctx context.Context) (context.Context, *statusRecord) {
	rec := &statusRecord{}
	return context.WithValue(ctx, statusKey{}, rec), rec
}

// withHTTPStatus returns err unchanged unless it holds a genai.APIError
// whose code is not an HTTP error status (none, or a stray number in the
// body) while the response had an error status: then a
// *model.ProviderError with that status wraps it, which the taxonomy
// classifies (the APIError stays reachable with errors.As).
func withHTTPStatus(err error, rec *statusRecord) error {
	status := int(rec.code.Load())
	if err == nil || status < 400 {
		return err
	}
	var gv genai.APIError
	var gp *genai.APIError
	switch {
	case errors.As(err, &gv):
		if errorStatus(gv.Code) {
			return err
		}
	case errors.As(err, &gp) && gp != nil:
		if errorStatus(gp.Code) {
			return err
		}
	default:
		return err
	}
	return &model.ProviderError{Provider: "gemini", StatusCode: status, Status: http.StatusText(status), Err: err}
}

// errorStatus reports whether code is an HTTP error status (400-599), as
// the taxonomy reads an APIError's code.
func errorStatus(code int) bool { return code >= 400 && code <= 599 }
