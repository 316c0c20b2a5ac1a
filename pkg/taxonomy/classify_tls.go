package taxonomy

import (
	"net"
	"reflect"
)

// TLS alert descriptions (RFC 8446 section 6, RFC 5246 section 7.2) that
// classifyTLSAlert treats specially. crypto/tls does not export its own
// copies.
const (
	tlsAlertBadCertificate         = 42
	tlsAlertUnsupportedCertificate = 43
	tlsAlertCertificateRevoked     = 44
	tlsAlertCertificateExpired     = 45
	tlsAlertCertificateUnknown     = 46
	tlsAlertUnknownCA              = 48
	tlsAlertAccessDenied           = 49
	tlsAlertProtocolVersion        = 70
	tlsAlertInsufficientSecurity   = 71
	tlsAlertCertificateRequired    = 116
)

// tlsRemoteErrorOp is the Op of the *net.OpError crypto/tls returns when
// the peer sent a fatal alert; its Err is the alert.
const tlsRemoteErrorOp = "remote error"

// tlsAlertType names crypto/tls's alert type by package path and type
// name. It is unexported, so errors.As cannot name it: it is matched by its
// reflect identity instead (a type, not message text), as the HTTP/2 error
// types are (see http2ErrorTypes). The end-to-end tests against a real
// mutual-TLS server (taxonomy_mtls_test.go) fail if a Go release
// renames or moves it.
var tlsAlertType = struct{ pkgPath, name string }{"crypto/tls", "alert"}

// tlsAlert returns the alert a *net.OpError carries when the TLS peer
// refused the handshake or the connection with a fatal alert
// (Op "remote error", Err crypto/tls's alert).
func tlsAlert(e error) (uint8, bool) {
	op, ok := e.(*net.OpError)
	if !ok || op == nil || op.Op != tlsRemoteErrorOp || op.Err == nil {
		return 0, false
	}
	v := reflect.ValueOf(op.Err)
	t := v.Type()
	if t.PkgPath() != tlsAlertType.pkgPath || t.Name() != tlsAlertType.name || v.Kind() != reflect.Uint8 {
		return 0, false
	}
	return uint8(v.Uint()), true
}

// classifyTLSAlert classifies the first fatal TLS alert the peer sent in
// err's chain (see classifyTLSAlertCode). It reports false when the chain
// holds none, or one whose alert keeps the connection-failure class.
func classifyTLSAlert(err error) (Class, bool) {
	var code uint8
	if !walkChain(err, func(e error) bool {
		c, ok := tlsAlert(e)
		code = c
		return ok
	}) {
		return "", false
	}
	return classifyTLSAlertCode(code)
}

// classifyTLSAlertCode maps a fatal TLS alert the peer sent to a class:
//
//   - bad_certificate, unsupported_certificate, certificate_revoked,
//     certificate_expired, certificate_unknown, unknown_ca, access_denied,
//     certificate_required: the endpoint (a mutual-TLS gateway or egress
//     proxy) refuses this client's certificate, or its lack of one; every
//     retry and replay gets the same refusal: Auth, which pages, like a
//     server certificate that fails verification.
//   - protocol_version, insufficient_security: the peer refuses this
//     client's TLS version or ciphers: the same client gets the same
//     answer again: Unknown, never retried, kept for review, like HTTP/2's
//     INADEQUATE_SECURITY.
//   - any other alert: false, and ClassifyError carries on (the
//     *net.OpError around it makes it Transport). handshake_failure among
//     them: TLS 1.2 sends it for a missing client certificate, but also
//     for a server whose signing key (an HSM, a KMS) failed once, which
//     TLS 1.3 reports as internal_error; a blip must be retried (found in
//     review, twenty-first session), and a fleet without its certificate
//     fails every call, which the error-rate alerts show.
func classifyTLSAlertCode(code uint8) (Class, bool) {
	switch code {
	case tlsAlertBadCertificate, tlsAlertUnsupportedCertificate, tlsAlertCertificateRevoked,
		tlsAlertCertificateExpired, tlsAlertCertificateUnknown, tlsAlertUnknownCA,
		tlsAlertAccessDenied, tlsAlertCertificateRequired:
		return Auth, true
	case tlsAlertProtocolVersion, tlsAlertInsufficientSecurity:
		return Unknown, true
	default:
		return "", false
	}
}
