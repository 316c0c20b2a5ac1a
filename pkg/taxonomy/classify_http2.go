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
	found := walkChain(err, func(e error) bool {
		c, ok := http2ErrCode(e)
		code = c
		return ok
	})
	if !found {
		return "", false
	}
	return classifyHTTP2Code(code), true
}

// classifyHTTP2Code maps an HTTP/2 error code (RST_STREAM, GOAWAY or a
// connection error) to a class:
//
//   - PROTOCOL_ERROR, FLOW_CONTROL_ERROR, STREAM_CLOSED, FRAME_SIZE_ERROR,
//     COMPRESSION_ERROR: one side broke the protocol (the client detected
//     a malformed frame, or the peer says the client sent one). That is a
//     bug in the client, the provider's front end or a proxy between them,
//     and a bug repeats: Unknown, so the call is not retried and the raw
//     message is kept for review, instead of TRANSPORT's retries and
//     automatic replays of a call that fails the same way each time.
//   - INADEQUATE_SECURITY, HTTP_1_1_REQUIRED: the peer refuses this
//     connection's TLS parameters or HTTP/2 itself; the same client gets
//     the same answer again: Unknown.
//   - ENHANCE_YOUR_CALM: the peer is shedding load it blames on this
//     client (too many streams or resets): RateLimited, like a 429.
//   - NO_ERROR (a response cut short, or a graceful GOAWAY such as a
//     front end restarting), INTERNAL_ERROR, SETTINGS_TIMEOUT,
//     REFUSED_STREAM (the request was not processed), CANCEL (the peer or
//     a proxy gave up the stream, typically because its upstream broke),
//     CONNECT_ERROR, and any code this list does not know (RFC 9113
//     section 7: an unknown code may be treated as INTERNAL_ERROR):
//     Transport, the HTTP/2 form of a connection reset.
//
// A cancellation by this client is not an HTTP/2 error: net/http returns
// the context's error, which ClassifyError checks first.
func classifyHTTP2Code(code uint32) Class {
	switch code {
	case http2ErrCodeProtocol, http2ErrCodeFlowControl, http2ErrCodeStreamClosed,
		http2ErrCodeFrameSize, http2ErrCodeCompression,
		http2ErrCodeInadequateSecurity, http2ErrCodeHTTP11Required:
		return Unknown
	case http2ErrCodeEnhanceYourCalm:
		return RateLimited
	default:
		return Transport
	}
}
