package gemini

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"google.golang.org/genai"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/providers/internal/sse"
	"github.com/agentfleet/agentfleet/pkg/retry"
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

// statusRecord holds what the last response of one call said beyond its
// body's JSON: the HTTP status, the Retry-After hint (the SDK's APIError
// carries no headers: a proxy's 429 with Retry-After and no RetryInfo
// lost its hint), the first error reading the body (the SDK reads a
// stream cut inside an event as a JSON error, hiding the broken
// connection: UNKNOWN instead of TRANSPORT) and the start of the event
// the body broke off in (cutInErrorEvent).
type statusRecord struct {
	code       atomic.Int32
	retryAfter atomic.Int64 // nanoseconds; 0: none
	readErr    atomic.Pointer[error]
	cutEvent   atomic.Pointer[[]byte]
}

// cutInErrorEvent reports whether the body broke off inside an error
// event (isErrorEvent), which the SDK could not decode.
func (r *statusRecord) cutInErrorEvent() bool {
	ev := r.cutEvent.Load()
	return ev != nil && isErrorEvent(*ev)
}

// statusTransport records the status of every response into the request
// context's statusRecord, if any, and, for such a call, reads a successful
// stream's body through streamFilter: the body the record follows is the
// one the SDK reads.
type statusTransport struct{ base http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (t statusTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if resp != nil {
		if rec, ok := r.Context().Value(statusKey{}).(*statusRecord); ok {
			rec.code.Store(int32(resp.StatusCode))
			d, _ := retry.HeaderHint(resp.Header, time.Now())
			rec.retryAfter.Store(int64(d))
			rec.readErr.Store(nil)
			rec.cutEvent.Store(nil)
			if resp.Body != nil {
				body := resp.Body
				if streamOK(r, resp) {
					body = sse.NewReader(body, (&streamFilter{}).edit)
				}
				resp.Body = &recordingBody{ReadCloser: body, rec: rec}
			}
		}
	}
	return resp, err
}

// A gateway or proxy in front of Gemini (Config.BaseURL) may add to a
// stream what the server-sent events format allows and the genai SDK's
// stream reader does not read: comment lines (": keep-alive", sent to keep
// an idle connection open during a long generation), the fields "event",
// "id" and "retry", and an OpenAI-style "data: [DONE]" after the last
// chunk. The SDK fails the call on each ("invalid stream chunk"), which the
// taxonomy classifies UNKNOWN, although the model answered. The SSE
// specification has a reader ignore comments and such fields, as the
// OpenAI adapter's SDK does; the adapter drops them from a successful
// stream's body before the SDK reads it (found in review, twenty-fifth
// session). Other lines stay as they are: the SDK reads an error event
// sent without "data:" (a bare JSON object) itself.

// streamOK reports whether resp is a successful answer to a streaming
// request (alt=sse), whose body is a stream of server-sent events.
func streamOK(r *http.Request, resp *http.Response) bool {
	return resp.StatusCode >= 200 && resp.StatusCode < 300 && r.URL.Query().Get("alt") == "sse"
}

// streamFilter is the sse.Editor of one stream body: it drops comment
// lines, the fields "event", "id" and "retry", "data: [DONE]", and the
// blank lines that would end an event left with no line (the SDK splits
// events at blank lines and fails on an event that starts with one), and
// keeps every other line as it came. It holds no line back: the stream's
// end (a nil line) gives nothing.
type streamFilter struct {
	inEvent bool // a kept line since the last blank line
}

// edit implements sse.Editor.
func (f *streamFilter) edit(line []byte) []byte {
	text := bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
	if len(text) == 0 {
		if !f.inEvent {
			return nil
		}
		f.inEvent = false
		return line
	}
	name, value, _ := bytes.Cut(text, []byte(":"))
	switch string(name) {
	case "", "event", "id", "retry":
		// A comment (a line starting with ":") or a field without
		// meaning for a Gemini stream.
		return nil
	case "data":
		if string(bytes.TrimPrefix(value, []byte(" "))) == "[DONE]" {
			return nil
		}
	}
	f.inEvent = true
	return line
}

// recordingBody records the first read error other than io.EOF, and the
// start of the event it broke off in.
type recordingBody struct {
	io.ReadCloser
	rec  *statusRecord
	head eventHead
}

// Read implements io.Reader.
func (b *recordingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.head.add(p[:n])
	if err != nil && !errors.Is(err, io.EOF) {
		if b.rec.readErr.CompareAndSwap(nil, &err) {
			ev := b.head.snapshot()
			b.rec.cutEvent.Store(&ev)
		}
	}
	return n, err
}

// withStatusTransport returns a copy of c (a new client when nil) whose
// transport records response statuses and which refuses a redirect that
// would send the API key to another origin: another scheme, host or port
// (checkRedirect; c's own CheckRedirect still applies to the others).
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
	out.CheckRedirect = checkRedirect(out.CheckRedirect)
	return &out
}

// recordStatus returns ctx carrying a fresh record of the call's HTTP
// status, and the record.
func recordStatus(ctx context.Context) (context.Context, *statusRecord) {
	rec := &statusRecord{}
	return context.WithValue(ctx, statusKey{}, rec), rec
}

// withHTTPStatus returns the SDK's error err with the configured API key
// removed (redactSDKError) and with what the SDK's error leaves out: the
// body's read error when the response broke off (wrapped, so the taxonomy
// sees the transport failure), and, for an error response, a
// *model.ProviderError with the HTTP status when the genai.APIError's code
// is not an error status (none, or a stray number in the body) or when there
// is no APIError because the error body broke off (the SDK then returns the
// read error, which the taxonomy would class TRANSPORT, although the status,
// which decides the class, had arrived: found in review, twenty-first
// session), and with the Retry-After hint when the server sent one. The
// ProviderError's Message is the text of the error it wraps, so the
// provider's message, status and details stay in the error text
// (ProviderError.Error does not print its Err; found in review, twenty-first
// session). That text is the SDK's error for a response that arrived (built
// from the body: no request URL or header in it) and, when the body broke
// off, the read error (which may name the connection's IP addresses, as any
// transport error does); the key is removed from it once more. The APIError
// stays reachable with errors.As.
func (m *Model) withHTTPStatus(err error, rec *statusRecord) error {
	if err == nil {
		return nil
	}
	err = m.redactSDKError(err)
	if re := rec.readErr.Load(); re != nil && !errors.Is(err, *re) {
		// The body broke off: that is the failure (a transport one), not
		// the half event the SDK could not decode.
		err = fmt.Errorf("%w (reading the response: %w)", err, *re)
	}
	status := int(rec.code.Load())
	if status < 400 {
		return err
	}
	hint := time.Duration(rec.retryAfter.Load())
	if d, ok := retry.ServerHint(err, time.Now()); ok && d > hint {
		// The API's own RetryInfo asks for longer than a proxy's header:
		// the longer wait wins (retry.ServerHint reads the ProviderError's
		// hint first).
		hint = d
	}
	coded := false // an APIError with an HTTP error code, which the taxonomy classifies
	var gv genai.APIError
	var gp *genai.APIError
	switch {
	case errors.As(err, &gv):
		coded = errorStatus(gv.Code)
	case errors.As(err, &gp) && gp != nil:
		coded = errorStatus(gp.Code)
	default:
		// Not an APIError: the SDK could not read the error body (it
		// broke off), so the status is said; or there is only the hint
		// to add.
		if hint <= 0 && rec.readErr.Load() == nil {
			return err
		}
	}
	if coded && hint <= 0 {
		return err
	}
	// One ProviderError: the status the taxonomy could not read (the
	// classifier reads an APIError in the chain first, so a coded one
	// still decides), and the server's Retry-After for the retry
	// decorator (retry.ServerHint).
	return &model.ProviderError{
		Provider:   ProviderName,
		StatusCode: status,
		Status:     http.StatusText(status),
		Message:    model.RedactKey(err.Error(), m.cfg.APIKey),
		RetryAfter: hint,
		Err:        err,
	}
}

// errorStatus reports whether code is an HTTP error status (400-599), as
// the taxonomy reads an APIError's code.
func errorStatus(code int) bool { return code >= 400 && code <= 599 }
