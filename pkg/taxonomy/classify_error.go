package taxonomy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"strings"
	"syscall"

	"github.com/openai/openai-go/v3"
	"google.golang.org/genai"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// StatusCoder is implemented by errors that carry an HTTP status
// (model.ProviderError does); ClassifyError maps the status of any such
// error in the chain.
type StatusCoder interface {
	HTTPStatusCode() int
}

// Detail type URLs of the google.rpc error details the classifiers read.
const (
	// TypeQuotaFailure is google.rpc.QuotaFailure: which quota was spent.
	TypeQuotaFailure = "type.googleapis.com/google.rpc.QuotaFailure"
	// TypeRetryInfo is google.rpc.RetryInfo: how long to wait.
	TypeRetryInfo = "type.googleapis.com/google.rpc.RetryInfo"
	// TypeErrorInfo is google.rpc.ErrorInfo: a machine-readable reason
	// (Gemini reports a bad API key as 400 INVALID_ARGUMENT with reason
	// API_KEY_INVALID).
	TypeErrorInfo = "type.googleapis.com/google.rpc.ErrorInfo"
)

// OpenAICodeInsufficientQuota is the OpenAI error code for a spent quota or
// billing limit (HTTP 429 that waiting does not fix).
const OpenAICodeInsufficientQuota = "insufficient_quota"

// ClassifyError classifies the error that ended a model call (the thrown
// channel). It walks the whole cause chain (errors.As, including joined
// errors) and checks types most specific first:
//
//  1. cancellation (context.Canceled) → Canceled, which is not a failure
//     class: a cancelled call is the caller's decision, not a fault, and no
//     other cause in the chain matters once the caller gave up. Callers
//     handling failures check IsCanceled (or compare with Canceled) first.
//  2. *model.CallBudgetError → CallBudget.
//  3. provider errors with an HTTP status: genai.APIError (value or
//     pointer), *openai.Error, *model.ProviderError, then any StatusCoder;
//     see ClassifyHTTPStatus. A 429 whose structured details say a quota is
//     spent is QuotaExhausted. A provider error without a status (0) does
//     not decide; the walk continues with its causes.
//  4. timeouts: context.DeadlineExceeded, os.ErrDeadlineExceeded, any
//     error in the chain whose Timeout() reports true → Timeout.
//  5. connection failures that retrying cannot fix, because the endpoint
//     is misconfigured: a server certificate that fails verification
//     (*tls.CertificateVerificationError, x509 unknown authority, host name
//     or invalid certificate) → Auth; a fatal TLS alert from the peer
//     refusing this client's certificate, or its lack of one (a mutual-TLS
//     gateway or egress proxy: bad_certificate, unsupported_certificate,
//     certificate_revoked, certificate_expired, certificate_unknown,
//     unknown_ca, access_denied, certificate_required) → Auth; a host name
//     that does not exist (*net.DNSError with IsNotFound), an https URL
//     for an endpoint that speaks plain HTTP (http.ErrSchemeMismatch) or
//     one that does not speak TLS at all (a tls.RecordHeaderError with
//     Conn set: the peer's first record is not TLS) → NotFound. These page, like the provider's own 401 and 404, instead
//     of being retried and replayed. A fatal alert refusing this client's
//     TLS version or ciphers (protocol_version, insufficient_security)
//     → Unknown, never
//     retried; handshake_failure stays Transport (a server's failed
//     signature sends it too). The alert is the *net.OpError{Op: "remote error"}
//     crypto/tls returns, whose Err is its unexported alert type, matched
//     by type (package path and name, through reflection) and read as a
//     number; any other alert falls through to step 7 (see
//     classifyTLSAlertCode).
//  6. HTTP/2 errors: a stream reset (RST_STREAM), a GOAWAY followed by
//     the connection closing, or a connection error, which net/http
//     returns as its unexported http2StreamError, http2GoAwayError and
//     http2ConnectionError (golang.org/x/net/http2's StreamError,
//     GoAwayError and ConnectionError with that module's Transport), are
//     matched by type (package path and name, through reflection, since
//     errors.As cannot name an unexported type) and classified by their
//     HTTP/2 error code: RateLimited for ENHANCE_YOUR_CALM; Unknown for
//     INADEQUATE_SECURITY, HTTP_1_1_REQUIRED and a protocol violation this
//     client detected (a connection error: a malformed frame, a bug that
//     a retry repeats); Transport for the rest, a protocol violation the
//     peer reports in an RST_STREAM or GOAWAY included (see
//     classifyHTTP2Code). This comes before step 7 because the *url.Error
//     around an HTTP/2 error is less specific.
//  7. connection failures: ECONNRESET, ECONNREFUSED, ECONNABORTED, EPIPE,
//     io.ErrUnexpectedEOF, net.ErrClosed, *net.OpError, *net.DNSError,
//     *url.Error → Transport.
//  8. anything else, and nil → Unknown.
//
// Message text is never inspected. ClassifyError never panics: an error
// chain whose methods panic (a typed nil *model.ProviderError, whose Unwrap
// dereferences its receiver) is classified Unknown.
func ClassifyError(err error) (c Class) {
	defer func() {
		if recover() != nil {
			c = Unknown
		}
	}()
	if err == nil {
		return Unknown
	}
	if IsCanceled(err) {
		return Canceled
	}
	if errors.Is(err, model.ErrCallBudgetExceeded) {
		return CallBudget
	}
	var budgetErr *model.CallBudgetError
	if errors.As(err, &budgetErr) {
		return CallBudget
	}
	if c, _, ok := classifyProvider(err); ok {
		return c
	}
	if isTimeout(err) {
		return Timeout
	}
	if c, ok := misconfiguredEndpoint(err); ok {
		return c
	}
	if c, ok := classifyHTTP2(err); ok {
		return c
	}
	if isTransport(err) {
		return Transport
	}
	return Unknown
}

// IsCanceled reports whether err was caused by cancellation
// (context.Canceled anywhere in its chain). A cancelled call is not a
// failure: do not count, retry, degrade or dead-letter it.
func IsCanceled(err error) (canceled bool) {
	defer func() {
		if recover() != nil {
			canceled = false
		}
	}()
	return err != nil && errors.Is(err, context.Canceled)
}

// isInChain reports whether target is in err's chain, as errors.Is does
// (equality, then an Is method, through single and multiple Unwrap), but
// never panics: a node whose Is or Unwrap panics (a typed nil pointer
// wrapped with %w) matches nothing, and the rest of the chain is still
// walked.
func isInChain(err, target error) bool {
	if err == nil || target == nil {
		return err == target
	}
	// Comparing e == target panics only when both have the same
	// non-comparable dynamic type, which cannot happen when target's type
	// is comparable.
	comparable := reflect.TypeOf(target).Comparable()
	return walkChain(err, func(e error) bool {
		if comparable && e == target {
			return true
		}
		x, ok := e.(interface{ Is(error) bool })
		return ok && safeIs(x, target)
	})
}

// safeIs calls an error's Is method, treating a panicking implementation
// (a nil receiver, say) as "no match".
func safeIs(x interface{ Is(error) bool }, target error) (b bool) {
	defer func() {
		if recover() != nil {
			b = false
		}
	}()
	return x.Is(target)
}

// classifyProvider maps the first provider error with a status found in
// err's chain, most specific type first. It also returns the status (0 when
// the class came from a flag without one).
func classifyProvider(err error) (Class, int, bool) {
	// An APIError's Code comes from the response body; one that is not an
	// HTTP error status (0 for a body without a code, or a stray number)
	// says nothing, and the adapter's ProviderError around it carries the
	// response's real status.
	var gv genai.APIError
	if errors.As(err, &gv) && errorStatus(gv.Code) {
		return classifyGemini(gv.Code, gv.Details), gv.Code, true
	}
	var gp *genai.APIError
	if errors.As(err, &gp) && gp != nil && errorStatus(gp.Code) {
		return classifyGemini(gp.Code, gp.Details), gp.Code, true
	}
	var oe *openai.Error
	if errors.As(err, &oe) && oe != nil {
		status := oe.StatusCode
		if status == 0 && oe.Response != nil {
			status = oe.Response.StatusCode
		}
		spent := oe.Code == OpenAICodeInsufficientQuota || oe.Type == OpenAICodeInsufficientQuota
		if status != 0 {
			return classifyStatus(status, spent), status, true
		}
		if spent {
			return QuotaExhausted, 0, true
		}
	}
	// The first provider error in the chain that says something: one
	// without a status or a quota flag does not decide, its causes may
	// (a stream adapter's status-less error around an HTTP error).
	var pe *model.ProviderError
	walkChain(err, func(e error) bool {
		p, ok := e.(*model.ProviderError)
		if ok && p != nil && (p.QuotaExhausted || p.StatusCode != 0) {
			pe = p
			return true
		}
		return false
	})
	if pe != nil {
		// The flag is the adapter's explicit statement that a quota is
		// spent, so it wins whatever the status.
		if pe.QuotaExhausted {
			return QuotaExhausted, pe.StatusCode, true
		}
		if pe.StatusCode != 0 {
			// An adapter's status around a Gemini APIError without a code
			// (gemini's withHTTPStatus): the error's details may still say
			// a quota is spent.
			var details []map[string]any
			switch {
			case errors.As(err, &gv):
				details = gv.Details
			case errors.As(err, &gp) && gp != nil:
				details = gp.Details
			}
			return classifyGemini(pe.StatusCode, details), pe.StatusCode, true
		}
	}
	// The first status in the chain: a StatusCoder without one (0) does
	// not decide.
	code := 0
	walkChain(err, func(e error) bool {
		if sc, ok := e.(StatusCoder); ok {
			code = safeStatus(sc)
		}
		return code != 0
	})
	if code != 0 {
		return classifyStatus(code, false), code, true
	}
	return "", 0, false
}

// errorStatus reports whether code is an HTTP error status (400-599).
func errorStatus(code int) bool { return code >= 400 && code <= 599 }

// safeStatus calls HTTPStatusCode, treating a panicking implementation (a
// nil receiver, say) as "no status".
func safeStatus(sc StatusCoder) (code int) {
	defer func() {
		if recover() != nil {
			code = 0
		}
	}()
	return sc.HTTPStatusCode()
}

// ClassifyHTTPStatus maps an HTTP status to a class: 400/413 BAD_REQUEST,
// 401/403 AUTH, 404 NOT_FOUND, 408/504 TIMEOUT, 429 RATE_LIMITED (or
// QUOTA_EXHAUSTED when quotaSpent), 409/499/500/502/503/529 and any other
// 5xx SERVER; anything else UNKNOWN.
func ClassifyHTTPStatus(status int, quotaSpent bool) Class {
	return classifyStatus(status, quotaSpent)
}

func classifyStatus(status int, quotaSpent bool) Class {
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		return BadRequest
	case http.StatusUnauthorized, http.StatusForbidden:
		return Auth
	case http.StatusNotFound:
		return NotFound
	case http.StatusRequestTimeout, http.StatusGatewayTimeout:
		return Timeout
	case http.StatusTooManyRequests:
		if quotaSpent {
			return QuotaExhausted
		}
		return RateLimited
	case http.StatusConflict, 529, 499:
		// 499: a provider's CANCELLED (Gemini's, under load) for a request
		// this client did not cancel; a cancellation of its own is
		// context.Canceled, which IsCanceled catches first.
		return Server
	}
	if status >= 500 && status < 600 {
		return Server
	}
	return Unknown
}

// classifyGemini maps a Gemini error's status and details: a status as
// classifyStatus, a QuotaFailure on a long window making a 429
// QUOTA_EXHAUSTED, and an ErrorInfo saying the API key was refused
// (API_KEY_INVALID, API_KEY_EXPIRED: sent as 400 INVALID_ARGUMENT) AUTH,
// so a bad credential pages as one and not as a malformed request.
func classifyGemini(status int, details []map[string]any) Class {
	if geminiKeyRefused(details) {
		return Auth
	}
	return classifyStatus(status, geminiQuotaSpent(details))
}

// geminiKeyRefused reports whether Gemini error details hold a
// google.rpc.ErrorInfo whose reason says the API key was refused.
func geminiKeyRefused(details []map[string]any) bool {
	for _, d := range details {
		if t, _ := d["@type"].(string); t != TypeErrorInfo {
			continue
		}
		switch reason, _ := d["reason"].(string); reason {
		case "API_KEY_INVALID", "API_KEY_EXPIRED":
			return true
		}
	}
	return false
}

// geminiQuotaSpent reports whether Gemini error details hold a
// google.rpc.QuotaFailure whose violated quota is a long-window one (per
// day or per month): a quota that waiting seconds does not refill. A
// per-minute violation is ordinary rate limiting.
func geminiQuotaSpent(details []map[string]any) bool {
	for _, d := range details {
		if t, _ := d["@type"].(string); t != TypeQuotaFailure {
			continue
		}
		violations, _ := d["violations"].([]any)
		for _, v := range violations {
			vm, ok := v.(map[string]any)
			if !ok {
				continue
			}
			for _, field := range []string{"quotaId", "quotaMetric", "quota_id", "quota_metric"} {
				if s, ok := vm[field].(string); ok && longWindowQuota(s) {
					return true
				}
			}
		}
	}
	return false
}

// longWindowQuota reports whether a quota id or metric names a daily or
// monthly window ("GenerateRequestsPerDayPerProjectPerModel-FreeTier",
// "requests_per_day"). These are structured identifiers, not messages.
func longWindowQuota(id string) bool {
	s := strings.ToLower(id)
	s = strings.NewReplacer("_", "", "-", "", " ", "", ".", "").Replace(s)
	return strings.Contains(s, "perday") || strings.Contains(s, "permonth") || strings.Contains(s, "daily")
}

// maxChainNodes bounds the chain walk (guards against pathological Unwrap
// implementations).
const maxChainNodes = 1000

// walkChain calls visit on err and every error it wraps (single and
// multiple Unwrap), depth first, until visit returns true. It reports
// whether visit did.
func walkChain(err error, visit func(error) bool) bool {
	stack := []error{err}
	for n := 0; len(stack) > 0 && n < maxChainNodes; n++ {
		e := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if e == nil {
			continue
		}
		if visit(e) {
			return true
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			stack = append(stack, safeUnwrap(u))
		case interface{ Unwrap() []error }:
			errs := safeUnwrapMulti(u)
			for i := len(errs) - 1; i >= 0; i-- {
				stack = append(stack, errs[i])
			}
		}
	}
	return false
}

func safeUnwrap(u interface{ Unwrap() error }) (e error) {
	defer func() {
		if recover() != nil {
			e = nil
		}
	}()
	return u.Unwrap()
}

func safeUnwrapMulti(u interface{ Unwrap() []error }) (e []error) {
	defer func() {
		if recover() != nil {
			e = nil
		}
	}()
	return u.Unwrap()
}

type timeouter interface{ Timeout() bool }

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	return walkChain(err, func(e error) bool {
		t, ok := e.(timeouter)
		return ok && safeTimeout(t)
	})
}

func safeTimeout(t timeouter) (b bool) {
	defer func() {
		if recover() != nil {
			b = false
		}
	}()
	return t.Timeout()
}

// misconfiguredEndpoint classifies the connection failures of an endpoint
// that is configured wrong (step 5 of ClassifyError).
func misconfiguredEndpoint(err error) (Class, bool) {
	var verr *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	if errors.As(err, &verr) || errors.As(err, &unknownCA) || errors.As(err, &hostErr) || errors.As(err, &invalid) {
		return Auth, true
	}
	if c, ok := classifyTLSAlert(err); ok {
		return c, true
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
		return NotFound, true
	}
	// A wrong address, like a host that does not exist: every call fails
	// the same way (it was TRANSPORT, retried and replayed for ever; found
	// in review, twenty-third session).
	if errors.Is(err, http.ErrSchemeMismatch) {
		return NotFound, true
	}
	// The same for a port that speaks neither TLS nor HTTP (SSH, Redis, a
	// database): crypto/tls sets RecordHeaderError.Conn only when the first
	// record from the peer does not look like TLS at all, and net/http
	// turns that into ErrSchemeMismatch only for a bare error whose bytes
	// are "HTTP/". A record header error after the handshake began (Conn
	// nil: an oversized record, a changed version) is not decided here: a
	// corrupted stream can be a blip (found in review of this session's
	// fix, twenty-third session).
	var rh tls.RecordHeaderError
	if errors.As(err, &rh) && rh.Conn != nil {
		return NotFound, true
	}
	return "", false
}

func isTransport(err error) bool {
	for _, target := range []error{
		syscall.ECONNRESET, syscall.ECONNREFUSED, syscall.ECONNABORTED, syscall.EPIPE,
		io.ErrUnexpectedEOF, net.ErrClosed,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	var opErr *net.OpError
	var dnsErr *net.DNSError
	var urlErr *url.Error
	return errors.As(err, &opErr) || errors.As(err, &dnsErr) || errors.As(err, &urlErr)
}
