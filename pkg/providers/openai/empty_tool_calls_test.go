package openai

import (
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Regression (found in review, nineteenth session): TestToolCallsFinishWithoutCallsIsNotHealthy:
// finish_reason "tool_calls" says the model called tools; the adapter mapped
// it to STOP on the assumption that "function calls travel in the content".
// When they do not (vLLM answers a tool_choice "required" request whose
// output no tool parser turned into a call with finish_reason "tool_calls",
// an empty tool_calls array and null content: vllm-project/vllm#53255), the
// result is a response with no content and finish reason STOP, which the
// taxonomy reads as healthy: the agent loop takes it as the final answer and
// the worker publishes a COMPLETED invocation whose answer is the empty
// string. No class, no metric, no dead letter: the seed's "treating empty
// content as success" failure mode, manufactured by the adapter. Correct: a
// choice that says "tool_calls" but carries no usable call (and no text) is
// an in-band failure, as a malformed call is (MALFORMED_FUNCTION_CALL,
// TOOL_PROTOCOL: the model may correct itself when asked again), never a
// healthy empty STOP. Streaming and non-streaming alike.
func TestToolCallsFinishWithoutCallsIsNotHealthy(t *testing.T) {
	const body = `{"id": "chatcmpl-7", "object": "chat.completion", "created": 1700000000, "model": "qwen2.5-7b-instruct",
	  "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": []}, "logprobs": null, "finish_reason": "tool_calls"}],
	  "usage": {"prompt_tokens": 80, "completion_tokens": 12, "total_tokens": 92}}`
	f := newFake(t, jsonHandler(200, body))
	m := newTestModel(t, f)
	resp, err := one(t, m, userText("refund order A-1042"))
	if err != nil {
		t.Fatal(err)
	}
	if c, failed := taxonomy.ClassifyResponse(resp); !failed || c != taxonomy.ToolProtocol {
		t.Errorf("non-streaming: finish_reason tool_calls without a call or text classified healthy (class %q, response %+v); want an in-band failure (TOOL_PROTOCOL)", c, resp)
	}

	f = newFake(t, sseHandler(
		chunk(`{"role": "assistant", "content": null}`, "null"),
		chunk(`{}`, `"tool_calls"`),
		"[DONE]",
	))
	m = newTestModel(t, f)
	resps, errs := collect(testCtx(t), m, userText("refund order A-1042"), true)
	if len(errs) != 0 || len(resps) == 0 {
		t.Fatalf("streaming: responses %d, errors %v", len(resps), errs)
	}
	final := resps[len(resps)-1]
	if c, failed := taxonomy.ClassifyResponse(final); !failed || c != taxonomy.ToolProtocol {
		t.Errorf("streaming: finish_reason tool_calls without a call or text classified healthy (class %q, response %+v); want an in-band failure (TOOL_PROTOCOL)", c, final)
	}
}

// TestToolCallsFinishWithTextIsAnswer: finish_reason "tool_calls" with no
// call but with text keeps the text as a STOP answer (only an empty one is
// a tool-protocol failure), and a legacy "function_call" finish without a
// call is the same failure as "tool_calls".
func TestToolCallsFinishWithTextIsAnswer(t *testing.T) {
	resp := FromChatCompletion(&openai.ChatCompletion{Choices: []openai.ChatCompletionChoice{{
		FinishReason: "tool_calls", Message: openai.ChatCompletionMessage{Content: "Your refund is on its way."},
	}}})
	if resp.FinishReason != model.FinishReasonStop || resp.ErrorCode != "" || resp.Content.Text() != "Your refund is on its way." {
		t.Errorf("tool_calls with text: %+v", resp)
	}
	resp = FromChatCompletion(&openai.ChatCompletion{Choices: []openai.ChatCompletionChoice{{
		FinishReason: "function_call", Message: openai.ChatCompletionMessage{Content: " \n"},
	}}})
	if resp.FinishReason != model.FinishReasonMalformedFunctionCall || resp.ErrorCode != model.FinishReasonMalformedFunctionCall || resp.ErrorMessage != "function_call" {
		t.Errorf("function_call without a call or text: %+v", resp)
	}
}
