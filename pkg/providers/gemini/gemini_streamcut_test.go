package gemini

import (
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Regression (found in review, twenty-first session): a stream cut after the
// chunk carrying the finish reason ends with the final, whole answer, not a
// TRANSPORT error.
//
// A stream whose connection drops after the chunk that carries the finish
// reason (and the usage) has delivered the whole answer: Gemini sends
// nothing after that chunk. The adapter yielded the partials, then the
// body's io.ErrUnexpectedEOF as an error instead of the final response, so
// the call was TRANSPORT after output was emitted: the retry decorator gives
// up (output_emitted) and the invocation was dead-lettered although the user
// was shown the complete answer. The OpenAI adapter had the same defect
// (a stream cut after choice 0's finish chunk) and it was fixed there
// (README, "returns the whole answer without usage; it was TRANSPORT and
// dead-lettered although the answer had been shown whole").
func TestStreamCutAfterFinishChunkKeepsAnswer(t *testing.T) {
	f := newFake(t, abortHandler(
		chunkText("Your refund "),
		`{"candidates": [{"content": {"role": "model", "parts": [{"text": "is done."}]}, "finishReason": "STOP", "index": 0}],
		  "usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 3, "totalTokenCount": 7}, "responseId": "sse-1"}`,
	))
	resps, errs := collect(testCtx(t), newTestModel(t, f), userText("hi"), true)
	for _, err := range errs {
		t.Errorf("complete answer (finish reason STOP received) then connection drop: error %v (class %s); want the final response",
			err, taxonomy.ClassifyError(err))
	}
	if len(resps) == 0 {
		t.Fatal("no responses")
	}
	final := resps[len(resps)-1]
	if final.Partial || final.Content.Text() != "Your refund is done." || final.FinishReason != model.FinishReasonStop {
		t.Errorf("last response partial=%v text=%q finish=%q; want the final, complete answer", final.Partial, final.Content.Text(), final.FinishReason)
	}
}
