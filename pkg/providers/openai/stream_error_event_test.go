package openai

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/retry"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Regression (found in review, seventeenth session): an error event at the start of a stream (HTTP 200, then
// data: {"error": {"type": "server_error", ...}}) is OpenAI's overload /
// internal error, the stream form of a 500. The adapter keeps its code and
// type in a *model.ProviderError without a status and maps only
// "insufficient_quota"; everything else is classified UNKNOWN, so a
// transient provider failure before any output is never retried, never
// degraded, and dead-lettered for manual review instead of replayed.
func TestStreamServerErrorEventBeforeOutputIsServer(t *testing.T) {
	const errEvent = `{"error": {"message": "The server had an error while processing your request. Sorry about that!", "type": "server_error", "param": null, "code": null}}`
	var n atomic.Int32
	ok := sseHandler(chunk(`{"role": "assistant", "content": "Hello."}`, `"stop"`), "[DONE]")
	bad := sseHandler(errEvent)
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			bad(w, r)
			return
		}
		ok(w, r)
	})
	m := newTestModel(t, f)

	_, errs := collect(testCtx(t), m, userText("hi"), true)
	if len(errs) != 1 {
		t.Fatalf("errors = %v, want one", errs)
	}
	if c := taxonomy.ClassifyError(errs[0]); c != taxonomy.Server {
		t.Errorf("stream error event type server_error before output: class %s, want SERVER (error: %v)", c, errs[0])
	}
	// The response was 200 OK: the text (what a DLQ entry's reason and the
	// logs show) must not say it was an HTTP 500.
	if msg := errs[0].Error(); !strings.Contains(msg, "stream error event") || strings.Contains(msg, ": HTTP 500") {
		t.Errorf("error text %q: want it to say a stream error event, not HTTP 500", msg)
	}

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
		t.Errorf("provider requests = %d, want 2", got)
	}
}
