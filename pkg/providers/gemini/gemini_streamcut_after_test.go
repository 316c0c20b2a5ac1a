package gemini

import (
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Regression (found in review, twenty-first session): a stream cut after a
// promptFeedback chunk without a blockReason (nothing of the answer yet) is
// a TRANSPORT error, not a successful empty answer.
//
// cutAfterFinish trusted summary.complete(), whose second case ("a blocked
// prompt") is any promptFeedback with no candidate seen, blockReason or
// not. A first chunk that carries only the prompt's safety ratings (no
// blockReason: the prompt was NOT blocked) followed by a dropped
// connection had been a TRANSPORT error (retried: no output was emitted);
// the change made it end with a "successful" final response holding no
// content and the sentinel errorCode "Unknown error." (in-band UNKNOWN:
// never retried, dead-lettered for review). Nothing of the answer had
// arrived.
func TestStreamCutAfterNonBlockingFeedbackIsTransport(t *testing.T) {
	f := newFake(t, abortHandler(`{"promptFeedback": {"safetyRatings": [{"category": "HARM_CATEGORY_HARASSMENT", "probability": "NEGLIGIBLE"}]}}`))
	resps, errs := collect(testCtx(t), newTestModel(t, f), userText("hi"), true)
	if len(errs) != 1 || !errors.Is(errs[0], io.ErrUnexpectedEOF) || taxonomy.ClassifyError(errs[0]) != taxonomy.Transport {
		for _, r := range resps {
			c, _ := taxonomy.ClassifyResponse(r)
			t.Logf("response: partial=%v text=%q errorCode=%q in-band class %s", r.Partial, r.Content.Text(), r.ErrorCode, c)
		}
		t.Errorf("a stream cut after a non-blocking promptFeedback chunk (no answer yet): errors %v; want one TRANSPORT error wrapping io.ErrUnexpectedEOF", errs)
	}
}

// Regression (found in review, twenty-first session): an error event cut
// short after the finish chunk stays an error.
//
// An error event that is itself cut short after the finish chunk: the SDK
// reports the half event as a JSON error (no genai.APIError), a read error
// was recorded, so cutAfterFinish ended the stream as a success. The doc
// says "an error event the server sends after that chunk stays an error".
func TestStreamHalfErrorEventAfterFinishIsError(t *testing.T) {
	fin := `{"candidates": [{"content": {"role": "model", "parts": [{"text": "done."}]}, "finishReason": "STOP", "index": 0}], "usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 3, "totalTokenCount": 7}}`
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "data: "+fin+"\r\n\r\ndata: {\"error\": {\"code\": 503, \"message\": \"The model is overlo")
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		_ = conn.Close()
	})
	_, errs := collect(testCtx(t), newTestModel(t, f), userText("hi"), true)
	if len(errs) == 0 {
		t.Errorf("an error event (cut short) after the finish chunk ended the stream as a success; want an error")
	}
}
