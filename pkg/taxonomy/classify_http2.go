package taxonomy

import "reflect"

// HTTP/2 error codes (RFC 9113 section 7) that classifyHTTP2Code treats
// specially. net/http does not export its own copies.
const (
	http2ErrCodeProtocol           = 0x1
	http2ErrCodeFlowControl        = 0x3
	http2ErrCodeStreamClosed       = 0x5
	http2ErrCodeFrameSize          = 0x6
	http2ErrCodeCompression        = 0x9
	http2ErrCodeEnhanceYourCalm    = 0xb
	http2ErrCodeInadequateSecurity = 0xc
	http2ErrCodeHTTP11Required     = 0xd
)

// http2ErrorTypes names the HTTP/2 error types ClassifyError recognises, by
// package path and type name, with the field that holds the error code (""
// when the type is the code itself). net/http's HTTP/2 client is bundled
// from golang.org/x/net/http2 with an "http2" prefix and the types are
// unexported, so errors.As cannot name them: they are matched by their
// reflect identity instead, which is a type, not message text. An
// application that configures golang.org/x/net/http2's own Transport gets
// the exported originals, which have the same shape. The end-to-end tests
// against a real HTTP/2 server (http2_errors_test.go) fail if a Go release
// renames or moves the bundled types.
var http2ErrorTypes = map[string]map[string]string{
	"net/http": {
		"http2StreamError":     "Code",    // RST_STREAM, sent by the peer or by the client
		"http2GoAwayError":     "ErrCode", // GOAWAY, then the connection closed
		"http2ConnectionError": "",        // the connection failed (a bad frame)
	},
	"golang.org/x/net/http2": {
		"StreamError":     "Code",
		"GoAwayError":     "ErrCode",
		"ConnectionError": "",
	},
}

// http2ErrCode returns the HTTP/2 error code carried by e when e is one of
// the http2ErrorTypes (value or non-nil pointer).
func http2ErrCode(e error) (uint32, bool) {
	v := reflect.ValueOf(e)
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return 0, false
		}
		v = v.Elem()
	}
	t := v.Type()
	field, ok := http2ErrorTypes[t.PkgPath()][t.Name()]
	if !ok {
		return 0, false
	}
	if field != "" {
		if v.Kind() != reflect.Struct {
			return 0, false
		}
		v = v.FieldByName(field)
	}
	if !v.IsValid() || v.Kind() != reflect.Uint32 {
		return 0, false
	}
	return uint32(v.Uint()), true
}

// classifyHTTP2 classifies the first HTTP/2 stream, GOAWAY or connection
// error in err's chain by its error code (see classifyHTTP2Code). It
// reports false when the chain holds none.
func classifyHTTP2(err error) (Class, bool) {
	var code uint32
	var conn bool
	found := walkChain(err, func(e error) bool {
		c, ok := http2ErrCode(e)
		code, conn = c, ok && http2ConnectionErr(e)
		return ok
	})
	if !found {
		return "", false
	}
	return classifyHTTP2Code(code, conn), true
}

// http2ConnectionErr reports whether e is a connection error: one this
// client detected in what the peer sent (a malformed frame).
func http2ConnectionErr(e error) bool {
	t := reflect.TypeOf(e)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name() == "http2ConnectionError" || t.Name() == "ConnectionError"
}

// classifyHTTP2Code maps an HTTP/2 error code (RST_STREAM, GOAWAY or, with
// conn, a connection error this client detected) to a class:
//
//   - ENHANCE_YOUR_CALM: the peer is shedding load it blames on this
//     client (too many streams or resets): RateLimited, like a 429.
//   - INADEQUATE_SECURITY, HTTP_1_1_REQUIRED: the peer refuses this
//     connection's TLS parameters or HTTP/2 itself; the same client gets
//     the same answer again: Unknown.
//   - PROTOCOL_ERROR, FLOW_CONTROL_ERROR, STREAM_CLOSED, FRAME_SIZE_ERROR,
//     COMPRESSION_ERROR in a connection error: this client found the peer
//     breaking the protocol (a malformed frame from the provider's front
//     end or a proxy), a bug that repeats: Unknown, kept for review.
//   - Every other code, and the protocol codes above in an RST_STREAM or a
//     GOAWAY the peer sent: Transport, the HTTP/2 form of a connection
//     reset, retried once. A peer's PROTOCOL_ERROR is no proof of a bug:
//     Google's front ends shed load with GOAWAY PROTOCOL_ERROR
//     "client_throttled" (found in review, nineteenth session: the first
//     version made it Unknown, dead-lettered for review, where it had been
//     TRANSPORT before HTTP/2 errors were classed at all). NO_ERROR (a
//     response cut short, a graceful GOAWAY), INTERNAL_ERROR,
//     SETTINGS_TIMEOUT, REFUSED_STREAM, CANCEL, CONNECT_ERROR and any code
//     this list does not know (RFC 9113 section 7: treat it as
//     INTERNAL_ERROR) are here.
//
// A cancellation by this client is not an HTTP/2 error: net/http returns
// the context's error, which ClassifyError checks first.
func classifyHTTP2Code(code uint32, conn bool) Class {
	switch code {
	case http2ErrCodeEnhanceYourCalm:
		return RateLimited
	case http2ErrCodeInadequateSecurity, http2ErrCodeHTTP11Required:
		return Unknown
	case http2ErrCodeProtocol, http2ErrCodeFlowControl, http2ErrCodeStreamClosed,
		http2ErrCodeFrameSize, http2ErrCodeCompression:
		if conn {
			return Unknown
		}
		return Transport
	default:
		return Transport
	}
}
