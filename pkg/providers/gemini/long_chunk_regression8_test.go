package gemini

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// capReads is a body whose every Read returns at most n bytes (a TLS
// connection hands a reader 16 KiB records; the point is only that a long
// line arrives in many reads).
type capReads struct {
	io.ReadCloser
	n int
}

func (c capReads) Read(p []byte) (int, error) {
	if len(p) > c.n {
		p = p[:c.n]
	}
	return c.ReadCloser.Read(p)
}

type capTransport struct{ base http.RoundTripper }

func (t capTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err == nil && resp.Body != nil {
		resp.Body = capReads{ReadCloser: resp.Body, n: 32 << 10}
	}
	return resp, err
}

// Regression (found in review of this session's fix, twenty-fifth
// session): a stream chunk whose data
// line longer than sse.maxLine was (16 MiB: a 4K image's base64 inlineData,
// well under the genai SDK's own 256 MiB line limit) is passed on by
// sse.reader unedited, past streamFilter.edit, so the filter never learns
// an event started (inEvent stays false) and DROPS the blank line that ends
// that event. The SDK, which splits events at blank lines, then reads the
// long chunk and the next one as one event ("error unmarshalling data"),
// and the call fails although the server sent a well-formed stream that the
// SDK read fine before the filter existed.
//
// What a user sees: a Gemini call with a large streamed chunk fails with an
// unmarshalling error (not retried as a transport failure would be); right
// is the whole answer. Fix: the reader must tell the editor about a line
// it passes on raw (or the Gemini filter must treat any bytes it did not
// see as a kept line), e.g. call edit on the line's held prefix and pass the
// rest raw, or make maxLine at least the SDK's own limit.
func TestLongStreamChunkEndsItsEvent(t *testing.T) {
	long := strings.Repeat("x", 17<<20) // more than sse.maxLine (16 MiB)
	final := `{"candidates": [{"content": {"role": "model", "parts": [{"text": "lo."}]}, "finishReason": "STOP", "index": 0}],
	  "usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 2, "totalTokenCount": 6}}`
	body := "data: " + chunkText(long) + "\r\n\r\n" + "data: " + final + "\r\n\r\n"
	f := newFake(t, rawSSEHandler(body, false))
	m := newTestModel(t, f, func(c *Config) {
		c.HTTPClient = &http.Client{Transport: capTransport{base: http.DefaultTransport}}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	resps, errs := collect(ctx, m, userText("hi"), true)
	for _, err := range errs {
		msg := err.Error()
		if len(msg) > 600 {
			msg = msg[:300] + " ... " + msg[len(msg)-300:]
		}
		t.Errorf("a well-formed stream with a chunk longer than 16 MiB failed, class %s: %s", taxonomy.ClassifyError(err), msg)
	}
	if len(errs) != 0 {
		return
	}
	if len(resps) == 0 || resps[len(resps)-1].Content.Text() != long+"lo." {
		t.Errorf("%d responses; want the whole answer (%d bytes)", len(resps), len(long)+3)
	}
}
