package agent_test

import (
	"context"
	"testing"

	openaisdk "github.com/openai/openai-go/v3"

	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/providers/openai"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Regression (found in review, nineteenth session): the nineteenth session made the OpenAI adapter map finish_reason
// "tool_calls" (or "function_call") with no usable call and no text to
// MALFORMED_FUNCTION_CALL, so that "the model may correct itself when asked
// again" instead of the empty answer being taken as a healthy final one. The
// adapter decides "no text" with strings.TrimSpace, but keeps the blank text
// part (" \n", a model's stray newline) in the response's content. The agent
// loop's ToolProtocolBreak, which decides whether the model is asked again,
// requires Content.Text() == "" exactly: a blank part makes it a final
// response. So for a choice {content: " \n", tool_calls: [], finish_reason:
// "tool_calls"} the model is never asked again; the invocation ends with the
// blank text as its final answer, and since TOOL_PROTOCOL is not a class the
// worker dead-letters (inBandDeadLetter), the worker publishes a COMPLETED
// invocation whose answer is blank: the very outcome the fix set out to
// prevent. Correct: a response the adapter calls a tool-protocol break with
// no usable text is asked again, like one with no content at all (the adapter
// drops the blank part, or the loop trims).
func TestBlankToolCallsFinishIsAskedAgain(t *testing.T) {
	blank := openai.FromChatCompletion(&openaisdk.ChatCompletion{Choices: []openaisdk.ChatCompletionChoice{{
		FinishReason: "tool_calls", Message: openaisdk.ChatCompletionMessage{Content: " \n"},
	}}})
	if c, failed := taxonomy.ClassifyResponse(blank); !failed || c != taxonomy.ToolProtocol {
		t.Fatalf("setup: the adapter's response %+v classifies %q, want TOOL_PROTOCOL", blank, c)
	}
	blank.TurnComplete = true
	f := newFixture(t, agenttest.Reply(blank), agenttest.Reply(agenttest.Text("Order A-1042 is on its way.")))
	out, err := f.runner.Invoke(context.Background(), agentReq("inv-blank-toolcalls"))
	if err != nil {
		t.Fatal(err)
	}
	var final string
	var code model.FinishReason
	if out.Final != nil {
		final, code = out.Final.Content.Text(), out.Final.ErrorCode
	}
	if final != "Order A-1042 is on its way." || out.ModelCalls != 2 {
		t.Fatalf("final answer %q (error code %q) after %d model call(s); want the model asked again after the tool-protocol break "+
			"and its second answer as the final one (2 calls)", final, code, out.ModelCalls)
	}
}
