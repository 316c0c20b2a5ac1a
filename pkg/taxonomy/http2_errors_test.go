package taxonomy_test

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/providers/gemini"
	"github.com/agentfleet/agentfleet/pkg/providers/openai"
	"github.com/agentfleet/agentfleet/pkg/retry"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// resetServer is an HTTP/2 (TLS) server that starts a 200 answer, sends
// part of the body and then resets the stream (RST_STREAM INTERNAL_ERROR),
// as a provider front end or a proxy does when its upstream breaks. It
// counts the requests it got.
func resetServer(t *testing.T, requests *atomic.Int32) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"candidates": [{"content": {"parts": [{"text": "hel`))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // HTTP/2: RST_STREAM on this stream only
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func firstError(seq func(func(*model.Response, error) bool)) error {
	for _, err := range seq {
		if err != nil {
			return err
		}
	}
	return nil
}

// Regression (found in review, nineteenth session): an HTTP/2 stream reset
// while the response body is read is a network failure, the HTTP/2 form of
// the connection reset / unexpected EOF that HTTP/1.1 gives (both Gemini
// and OpenAI speak HTTP/2). The real adapters return it as net/http's
// unexported http2StreamError ("stream error: stream ID 1; INTERNAL_ERROR;
// received from peer"), which is neither a *url.Error, a *net.OpError nor
// io.ErrUnexpectedEOF, so ClassifyError filed it UNKNOWN: never retried by
// the decorator, no degraded answer, dead-lettered "for review" and never
// replayed automatically. (A dropped connection in the same place comes
// back as io.ErrUnexpectedEOF and is TRANSPORT.) Correct: TRANSPORT, with
// or without streaming, for both adapters.
func TestHTTP2StreamResetIsTransport(t *testing.T) {
	var requests atomic.Int32
	srv := resetServer(t, &requests)
	req := &model.Request{Contents: []*model.Content{model.NewTextContent(model.RoleUser, "hi")}}
	g, err := gemini.New(context.Background(), gemini.Config{APIKey: "k", Model: "gemini-2.5-flash", BaseURL: srv.URL, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	o, err := openai.New(openai.Config{APIKey: "k", Model: "gpt-4o", BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		m      model.Model
		stream bool
	}{
		{"gemini", g, false},
		{"gemini stream", g, true},
		{"openai", o, false},
		{"openai stream", o, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := firstError(tc.m.GenerateContent(context.Background(), req, tc.stream))
			if err == nil {
				t.Fatal("the reset call succeeded")
			}
			if c := taxonomy.ClassifyError(err); c != taxonomy.Transport {
				t.Fatalf("an HTTP/2 stream reset is classified %s, want %s: %v", c, taxonomy.Transport, err)
			}
		})
	}
}

// Regression (found in review, nineteenth session): the consequence in the
// one retry layer: a non-streaming Gemini call whose stream was reset
// before anything was forwarded was not retried (one request), because its
// class was UNKNOWN. Correct: retried once (two requests), as any transient
// network failure.
func TestHTTP2StreamResetIsRetried(t *testing.T) {
	var requests atomic.Int32
	srv := resetServer(t, &requests)
	g, err := gemini.New(context.Background(), gemini.Config{APIKey: "k", Model: "gemini-2.5-flash", BaseURL: srv.URL, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	m, err := retry.New(g, retry.Config{MaxAttempts: 2, DisableBudget: true},
		retry.WithSleep(func(ctx context.Context, _ time.Duration) error { return ctx.Err() }))
	if err != nil {
		t.Fatal(err)
	}
	req := &model.Request{Contents: []*model.Content{model.NewTextContent(model.RoleUser, "hi")}}
	err = firstError(m.GenerateContent(context.Background(), req, false))
	if err == nil {
		t.Fatal("the reset call succeeded")
	}
	if n := requests.Load(); n != 2 {
		t.Fatalf("%d request(s) for a call whose stream was reset before any output, want 2 (one retry); error class %s: %v",
			n, taxonomy.ClassifyError(err), err)
	}
}

// HTTP/2 frame types, flags and error codes (RFC 9113) the raw server uses.
const (
	h2FrameData     = 0x0
	h2FrameHeaders  = 0x1
	h2FrameRST      = 0x3
	h2FrameSettings = 0x4
	h2FrameGoAway   = 0x7

	h2FlagEndStream  = 0x1
	h2FlagAck        = 0x1
	h2FlagEndHeaders = 0x4

	h2NoError          = 0x0
	h2ProtocolError    = 0x1
	h2InternalError    = 0x2
	h2FlowControlError = 0x3
	h2SettingsTimeout  = 0x4
	h2StreamClosed     = 0x5
	h2FrameSizeError   = 0x6
	h2RefusedStream    = 0x7
	h2Cancel           = 0x8
	h2CompressionError = 0x9
	h2ConnectError     = 0xa
	h2EnhanceYourCalm  = 0xb
	h2InadequateSec    = 0xc
	h2HTTP11Required   = 0xd
	h2UnknownCode      = 0x42 // not assigned: RFC 9113 allows treating it as INTERNAL_ERROR
)

// h2Frame is one raw HTTP/2 frame.
type h2Frame struct {
	typ, flags byte
	stream     uint32
	payload    []byte
}

func (f h2Frame) bytes() []byte {
	b := make([]byte, 9, 9+len(f.payload))
	n := len(f.payload)
	b[0], b[1], b[2] = byte(n>>16), byte(n>>8), byte(n)
	b[3], b[4] = f.typ, f.flags
	binary.BigEndian.PutUint32(b[5:], f.stream)
	return append(b, f.payload...)
}

func rstStream(code uint32) h2Frame {
	return h2Frame{typ: h2FrameRST, stream: 1, payload: binary.BigEndian.AppendUint32(nil, code)}
}

// goAway says the connection is going away after stream 1 (which the
// server has started to answer) and carries code.
func goAway(code uint32) h2Frame {
	p := binary.BigEndian.AppendUint32(nil, 1)
	p = binary.BigEndian.AppendUint32(p, code)
	return h2Frame{typ: h2FrameGoAway, payload: append(p, "going away"...)}
}

// dataOnStreamZero is a frame the client must treat as a connection error
// of type PROTOCOL_ERROR (RFC 9113 section 6.1).
var dataOnStreamZero = h2Frame{typ: h2FrameData, stream: 0}

// readH2Request reads the client's connection preface and frames up to the
// end of its first request (a GET: a HEADERS frame that ends the stream),
// acknowledging its SETTINGS.
func readH2Request(c *tls.Conn) error {
	preface := make([]byte, 24)
	if _, err := io.ReadFull(c, preface); err != nil {
		return err
	}
	hdr := make([]byte, 9)
	for {
		if _, err := io.ReadFull(c, hdr); err != nil {
			return err
		}
		n := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
		if _, err := io.CopyN(io.Discard, c, int64(n)); err != nil {
			return err
		}
		typ, flags := hdr[3], hdr[4]
		stream := binary.BigEndian.Uint32(hdr[5:]) & 0x7fffffff
		switch {
		case typ == h2FrameSettings && flags&h2FlagAck == 0:
			if _, err := c.Write(h2Frame{typ: h2FrameSettings, flags: h2FlagAck}.bytes()); err != nil {
				return err
			}
		case typ == h2FrameHeaders && stream == 1 && flags&h2FlagEndStream != 0:
			return nil
		}
	}
}

// http2Failure makes a GET against a raw HTTP/2 server which, once it has
// read the request, starts a 200 answer (HEADERS, then part of the body)
// when respond is set, writes frames and closes the connection. It returns
// the client's error: from the request, or from reading the body. The
// errors are the ones net/http really returns, not constructed ones.
func http2Failure(t *testing.T, respond bool, frames ...h2Frame) error {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.EnableHTTP2 = true
	srv.Config.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){
		"h2": func(_ *http.Server, c *tls.Conn, _ http.Handler) {
			defer c.Close()
			if _, err := c.Write(h2Frame{typ: h2FrameSettings}.bytes()); err != nil {
				return
			}
			if readH2Request(c) != nil {
				return
			}
			var out []byte
			if respond {
				// HPACK: 0x88 is the static table's ":status: 200".
				out = append(out, h2Frame{typ: h2FrameHeaders, flags: h2FlagEndHeaders, stream: 1, payload: []byte{0x88}}.bytes()...)
				out = append(out, h2Frame{typ: h2FrameData, stream: 1, payload: []byte(`{"partial":`)}.bytes()...)
			}
			for _, f := range frames {
				out = append(out, f.bytes()...)
			}
			_, _ = c.Write(out)
		},
	}
	srv.StartTLS()
	defer srv.Close()

	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		if respond {
			t.Fatalf("the request failed before its answer started: %v", err)
		}
		return err
	}
	defer resp.Body.Close()
	if !respond {
		t.Fatalf("got an answer (%s) from a server that sent none", resp.Status)
	}
	if resp.ProtoMajor != 2 {
		t.Fatalf("the answer came over %s, want HTTP/2", resp.Proto)
	}
	_, err = io.ReadAll(resp.Body)
	if err == nil {
		t.Fatal("the cut-off body read without an error")
	}
	return err
}

// isType reports whether err's dynamic type prints as typeName.
func isType(err error, typeName string) bool {
	return fmt.Sprintf("%T", err) == typeName
}

// TestClassifyError_RealHTTP2Errors classifies the HTTP/2 errors net/http
// returns for a stream reset (RST_STREAM), a GOAWAY followed by the
// connection closing, and a connection error, for every error code: a
// transient one is TRANSPORT, ENHANCE_YOUR_CALM is RATE_LIMITED, a protocol
// violation (a bug somewhere, which a retry repeats) or a refusal of this
// client's TLS or HTTP/2 is UNKNOWN. The type checks keep the classifier
// honest across Go releases: it matches the unexported types by name.
func TestClassifyError_RealHTTP2Errors(t *testing.T) {
	for _, tc := range []struct {
		code  uint32
		class taxonomy.Class
	}{
		{h2NoError, taxonomy.Transport},
		{h2ProtocolError, taxonomy.Transport},
		{h2InternalError, taxonomy.Transport},
		{h2FlowControlError, taxonomy.Transport},
		{h2SettingsTimeout, taxonomy.Transport},
		{h2StreamClosed, taxonomy.Transport},
		{h2FrameSizeError, taxonomy.Transport},
		{h2RefusedStream, taxonomy.Transport},
		{h2Cancel, taxonomy.Transport},
		{h2CompressionError, taxonomy.Transport},
		{h2ConnectError, taxonomy.Transport},
		{h2EnhanceYourCalm, taxonomy.RateLimited},
		{h2InadequateSec, taxonomy.Unknown},
		{h2HTTP11Required, taxonomy.Unknown},
		{h2UnknownCode, taxonomy.Transport},
	} {
		code, class := tc.code, tc.class
		t.Run(fmt.Sprintf("RST_STREAM %#x", code), func(t *testing.T) {
			err := http2Failure(t, true, rstStream(code))
			if !isType(err, "http.http2StreamError") {
				t.Fatalf("net/http returned %T (%v), not its http2StreamError: update the classifier's type table", err, err)
			}
			if got := taxonomy.ClassifyError(fmt.Errorf("adapter: %w", err)); got != class {
				t.Fatalf("got %s, want %s: %v", got, class, err)
			}
		})
		t.Run(fmt.Sprintf("GOAWAY %#x", code), func(t *testing.T) {
			err := http2Failure(t, true, goAway(code))
			if !isType(err, "http.http2GoAwayError") {
				t.Fatalf("net/http returned %T (%v), not its http2GoAwayError: update the classifier's type table", err, err)
			}
			if got := taxonomy.ClassifyError(fmt.Errorf("adapter: %w", err)); got != class {
				t.Fatalf("got %s, want %s: %v", got, class, err)
			}
		})
	}
	t.Run("connection error", func(t *testing.T) {
		err := http2Failure(t, true, dataOnStreamZero)
		if !isType(err, "http.http2ConnectionError") {
			t.Fatalf("net/http returned %T (%v), not its http2ConnectionError: update the classifier's type table", err, err)
		}
		if got := taxonomy.ClassifyError(err); got != taxonomy.Unknown {
			t.Fatalf("a server that broke the protocol is %s, want %s: %v", got, taxonomy.Unknown, err)
		}
	})
	t.Run("reset before the answer, inside a url.Error", func(t *testing.T) {
		err := http2Failure(t, false, rstStream(h2EnhanceYourCalm))
		var urlErr *url.Error
		if !errors.As(err, &urlErr) {
			t.Fatalf("the request failed with %T (%v), not a *url.Error", err, err)
		}
		// The HTTP/2 error is more specific than the *url.Error around it.
		if got := taxonomy.ClassifyError(err); got != taxonomy.RateLimited {
			t.Fatalf("got %s, want %s: %v", got, taxonomy.RateLimited, err)
		}
	})
}
