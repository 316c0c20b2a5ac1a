package gemini

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/retry"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Regression (found in review, seventeenth session): a stream whose connection drops in the middle of an SSE event (the
// usual shape of a reset: the TCP stream stops inside a chunk) reaches the
// SDK's scanner as a partial final token, which fails to unmarshal; the
// adapter returns that JSON error, classified UNKNOWN (never retried,
// dead-lettered for review, never replayed automatically) although it is a
// transport failure (io.ErrUnexpectedEOF from the body) before any output
// reached the caller. A drop between events is TRANSPORT and retried
// (TestStreamDropsMidway); a drop inside one must be too.
func TestStreamCutMidEventIsTransportAndRetried(t *testing.T) {
	var n atomic.Int32
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		if n.Add(1) == 1 {
			_, _ = io.WriteString(w, `data: {"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": "get_or`)
			w.(http.Flusher).Flush()
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				panic(err)
			}
			_ = conn.Close()
			return
		}
		_, _ = io.WriteString(w, "data: "+`{"candidates": [{"content": {"role": "model", "parts": [{"text": "Hello."}]}, "finishReason": "STOP", "index": 0}]}`+"\r\n\r\n")
	})
	m := newTestModel(t, f)

	// The adapter's own error: what the taxonomy sees.
	_, errs := collect(testCtx(t), m, userText("hi"), true)
	if len(errs) != 1 {
		t.Fatalf("first call errors = %v, want one", errs)
	}
	if c := taxonomy.ClassifyError(errs[0]); c != taxonomy.Transport {
		t.Errorf("stream cut inside an event: class %s, want TRANSPORT (error: %v)", c, errs[0])
	}

	// Through the one retry layer: nothing was emitted, so it is retried.
	n.Store(0)
	r, err := retry.New(m, retry.Config{MaxAttempts: 2, DisableBudget: true},
		retry.WithSleep(func(ctx context.Context, d time.Duration) error { return ctx.Err() }))
	if err != nil {
		t.Fatal(err)
	}
	resps, errs := collect(testCtx(t), r, userText("hi"), true)
	if len(errs) != 0 || len(resps) == 0 || resps[len(resps)-1].Content.Text() != "Hello." {
		t.Errorf("through the retry decorator: responses %d, errors %v; want the second attempt's answer", len(resps), errs)
	}
	if got := n.Load(); got != 2 {
		t.Errorf("provider requests = %d, want 2 (one retry of a transport failure before output)", got)
	}
}
