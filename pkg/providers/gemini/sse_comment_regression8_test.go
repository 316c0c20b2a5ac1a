package gemini

import (
	"errors"
	"io"
	"net/http"
	"testing"

	"google.golang.org/genai"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// rawSSEHandler answers 200 with body as the event stream, then, when cut,
// drops the connection instead of ending the response.
func rawSSEHandler(body string, cut bool) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, body)
		w.(http.Flusher).Flush()
		if !cut {
			return
		}
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		_ = conn.Close()
	}
}

// Regression (found in review, twenty-fifth session): a Gemini stream that
// reaches the adapter through a proxy or gateway (Config.BaseURL) may carry
// SSE comment lines (": keep-alive", ": ping"), the fields "event:", "id:"
// and "retry:", or an OpenAI-style "data: [DONE]" after the last chunk. The
// SSE specification has a reader ignore comments and such fields, as the
// OpenAI adapter's SDK does; the genai SDK failed the call on each
// ("iterateResponseStream: invalid stream chunk: : keep-alive"), which
// pkg/taxonomy classifies UNKNOWN: never retried, dead-lettered for review,
// never replayed, although the model answered. The adapter now drops them
// before the SDK reads the stream; an error event, and a stream cut inside
// an event (the cut detection reads the body the SDK reads), stay what they
// were.
func TestStreamIgnoresSSECommentsAndFields(t *testing.T) {
	final := `{"candidates": [{"content": {"role": "model", "parts": [{"text": "lo."}]}, "finishReason": "STOP", "index": 0}],
	  "usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 2, "totalTokenCount": 6}}`
	for _, tc := range []struct {
		name, body string
	}{
		{"keep-alive comments (review body)", ": keep-alive\r\n\r\n" +
			"data: " + chunkText("Hel") + "\r\n\r\n" +
			": ping\r\n\r\n" +
			"data: " + final + "\r\n\r\n"},
		{"fields event, id, retry and [DONE], LF line ends", "retry: 3000\n\n" +
			"event: message\nid: 1\ndata: " + chunkText("Hel") + "\n\n" +
			": ping\n" +
			"event: message\nid: 2\ndata:" + final + "\n\n" +
			"data: [DONE]\n\n"},
		{"comment inside an event, extra blank lines, [DONE] without a final blank line", "\r\n" +
			"data: " + chunkText("Hel") + "\r\n: keep-alive\r\n\r\n\r\n" +
			"id: 2\r\ndata: " + final + "\r\n\r\n" +
			"data: [DONE]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, rawSSEHandler(tc.body, false))
			resps, errs := collect(testCtx(t), newTestModel(t, f), userText("hi"), true)
			for _, err := range errs {
				t.Errorf("stream with SSE comments or fields failed, class %s: %v", taxonomy.ClassifyError(err), err)
			}
			if len(errs) != 0 || len(resps) == 0 {
				return
			}
			if resps[0].Content.Text() != "Hel" || !resps[0].Partial {
				t.Errorf("first response = %+v (%q), want the partial %q", resps[0], resps[0].Content.Text(), "Hel")
			}
			last := resps[len(resps)-1]
			if last.Partial || last.Content.Text() != "Hello." || last.FinishReason != model.FinishReasonStop ||
				last.Usage == nil || last.Usage.TotalTokens != 6 {
				t.Errorf("final = %+v (%q), want the whole answer %q with STOP and its usage", last, last.Content.Text(), "Hello.")
			}
		})
	}

	// An error event after a comment in the same event is still the
	// server's error, classified by its code.
	f := newFake(t, rawSSEHandler(": ping\r\nevent: error\r\ndata: {\"error\": {\"code\": 503, \"message\": \"The model is overloaded.\", \"status\": \"UNAVAILABLE\"}}\r\n\r\n", false))
	_, errs := collect(testCtx(t), newTestModel(t, f), userText("hi"), true)
	var apiErr genai.APIError
	if len(errs) != 1 || !errors.As(errs[0], &apiErr) || apiErr.Code != 503 || taxonomy.ClassifyError(errs[0]) != taxonomy.Server {
		t.Errorf("error event after a comment: errors %v, want one genai.APIError 503 classified SERVER", errs)
	}

	// A stream cut inside an event after a keep-alive is a transport
	// failure, as without the comment.
	f = newFake(t, rawSSEHandler(": keep-alive\r\n\r\ndata: {\"candidates\": [{\"content\": {\"role\": \"mo", true))
	_, errs = collect(testCtx(t), newTestModel(t, f), userText("hi"), true)
	if len(errs) != 1 || !errors.Is(errs[0], io.ErrUnexpectedEOF) || taxonomy.ClassifyError(errs[0]) != taxonomy.Transport {
		t.Errorf("stream cut inside an event after a keep-alive: errors %v, want one TRANSPORT error wrapping io.ErrUnexpectedEOF", errs)
	}

	// An error event cut short after the finish chunk, a comment line
	// before it in its event, stays an error (cutInErrorEvent reads the
	// event without the comment).
	fin := `{"candidates": [{"content": {"role": "model", "parts": [{"text": "done."}]}, "finishReason": "STOP", "index": 0}]}`
	f = newFake(t, rawSSEHandler("data: "+fin+"\r\n\r\n: ping\r\ndata: {\"error\": {\"code\": 503, \"message\": \"The model is overlo", true))
	_, errs = collect(testCtx(t), newTestModel(t, f), userText("hi"), true)
	if len(errs) != 1 {
		t.Errorf("an error event (cut short, after a comment) after the finish chunk: errors %v, want one error", errs)
	}

	// A cut after the finish chunk and a keep-alive still returns the
	// whole answer.
	f = newFake(t, rawSSEHandler("data: "+fin+"\r\n\r\n: keep-alive\r\n\r\n", true))
	resps, errs := collect(testCtx(t), newTestModel(t, f), userText("hi"), true)
	if len(errs) != 0 || len(resps) == 0 || resps[len(resps)-1].Content.Text() != "done." {
		t.Errorf("a cut after the finish chunk and a keep-alive: %d responses, errors %v; want the whole answer", len(resps), errs)
	}
}
