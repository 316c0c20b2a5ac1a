package openai

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// withNullError returns a chunk's JSON with a top-level "error": null
// member, as some OpenAI-compatible gateways put in every chunk.
func withNullError(chunk string) string {
	return strings.Replace(chunk, `{"id"`, `{"error": null, "id"`, 1)
}

// Regression (found in review, twenty-fifth session): an OpenAI-compatible
// stream whose chunks carry "error": null (a gateway that always sends the
// member) ended at its first chunk: openai-go's Stream.Next takes any
// top-level "error" that exists, JSON null included, for an error event,
// so the call failed with a *ssestream.StreamError with an empty message
// ("received error while streaming: "), classified UNKNOWN (never retried,
// dead-lettered for review), and the answer was lost. A JSON-null error is
// no error: the adapter removes the member before the SDK reads the chunk;
// an error event with an error object stays one.
func TestStreamIgnoresNullErrorMember(t *testing.T) {
	f := newFake(t, sseHandler(
		withNullError(chunk(`{"role": "assistant", "content": "Hel"}`, "null")),
		strings.Replace(chunk(`{"content": "lo."}`, `"stop"`), `"model"`, `"error" :null , "model"`, 1),
		`{"error":null,`+strings.TrimPrefix(usageChunk, "{"),
		"[DONE]",
	))
	resps, errs := collect(testCtx(t), newTestModel(t, f), userText("hi"), true)
	for _, err := range errs {
		t.Errorf("stream with \"error\": null in its chunks failed, class %s: %v", taxonomy.ClassifyError(err), err)
	}
	if len(errs) != 0 || len(resps) == 0 {
		return
	}
	last := resps[len(resps)-1]
	if last.Partial || last.Content.Text() != "Hello." || last.FinishReason != model.FinishReasonStop ||
		last.Usage == nil || last.Usage.TotalTokens != 9 || last.ProviderRequestID != "chatcmpl-s1" {
		t.Errorf("final = %+v (%q), want the whole answer %q with STOP, its id and usage", last, last.Content.Text(), "Hello.")
	}

	// One-line events with CRLF line ends, an event type, a comment and
	// "error" : null in several places come through whole.
	body := ": keep-alive\r\n\r\n" +
		"event: chunk\r\ndata: " + `{"id":"chatcmpl-s2","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}],"error":null}` + "\r\n\r\n" +
		": ping\r\ndata:" + `{"error" : null,"id":"chatcmpl-s2","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"!"},"finish_reason":"stop"}],"error":null}` + "\r\n\r\n" +
		"data: [DONE]\r\n\r\n"
	f = newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, body)
	})
	resps, errs = collect(testCtx(t), newTestModel(t, f), userText("hi"), true)
	if len(errs) != 0 || len(resps) == 0 || resps[len(resps)-1].Content.Text() != "Hi!" || resps[len(resps)-1].ProviderRequestID != "chatcmpl-s2" {
		t.Errorf("one-line events with \"error\": null: %d responses, errors %v; want the whole answer %q", len(resps), errs, "Hi!")
	}

	// An error object next to the chunk's fields is still an error event.
	const ev = `{"id": "chatcmpl-s1", "choices": [], "error": {"message": "The server had an error.", "type": "server_error"}}`
	f = newFake(t, sseHandler(withNullError(chunk(`{"role": "assistant", "content": "Hel"}`, "null")), ev))
	_, errs = collect(testCtx(t), newTestModel(t, f), userText("hi"), true)
	if len(errs) != 1 || taxonomy.ClassifyError(errs[0]) != taxonomy.Server || !strings.Contains(errs[0].Error(), "The server had an error.") {
		t.Errorf("error event after a chunk with \"error\": null: errors %v, want one SERVER error with the message", errs)
	}
}
