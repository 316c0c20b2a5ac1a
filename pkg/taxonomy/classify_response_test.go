package taxonomy_test

import (
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

func TestClassifyResponse(t *testing.T) {
	text := model.NewTextContent(model.RoleModel, "hello")
	const healthy taxonomy.Class = ""
	cases := []struct {
		name string
		resp *model.Response
		want taxonomy.Class
	}{
		// The in-band cases of the seed's Java test table.
		{"seed: MAX_TOKENS", &model.Response{FinishReason: model.FinishReasonMaxTokens}, taxonomy.Truncated},
		{"CONTINUATION: the token limit cut it off", &model.Response{FinishReason: model.FinishReasonContinuation}, taxonomy.Truncated},
		{"seed: SAFETY with errorCode SAFETY is output, not prompt", &model.Response{FinishReason: model.FinishReasonSafety, ErrorCode: model.FinishReasonSafety}, taxonomy.OutputBlocked},
		{"seed: errorCode PROHIBITED_CONTENT without candidate", &model.Response{ErrorCode: model.FinishReasonProhibitedContent}, taxonomy.PromptBlocked},
		{"seed: errorCode Unknown error.", &model.Response{ErrorCode: model.ErrorCodeUnknown, ErrorMessage: "Unknown error."}, taxonomy.Unknown},

		{"STOP with text", &model.Response{Content: text, FinishReason: model.FinishReasonStop}, healthy},
		{"unspecified finish reason", &model.Response{Content: text, FinishReason: model.FinishReasonUnspecified}, healthy},
		{"content without finish reason", &model.Response{Content: text}, healthy},
		{"function call without finish reason", &model.Response{Content: &model.Content{Role: model.RoleModel, Parts: []*model.Part{{FunctionCall: &model.FunctionCall{Name: "f"}}}}}, healthy},
		{"partial delta", &model.Response{Partial: true}, healthy},
		{"RECITATION", &model.Response{Content: text, FinishReason: model.FinishReasonRecitation}, taxonomy.OutputBlocked},
		{"BLOCKLIST", &model.Response{FinishReason: model.FinishReasonBlocklist}, taxonomy.OutputBlocked},
		{"PROHIBITED_CONTENT finish", &model.Response{FinishReason: model.FinishReasonProhibitedContent}, taxonomy.OutputBlocked},
		{"SPII", &model.Response{FinishReason: model.FinishReasonSPII}, taxonomy.OutputBlocked},
		{"IMAGE_SAFETY", &model.Response{FinishReason: model.FinishReasonImageSafety}, taxonomy.OutputBlocked},
		{"MALFORMED_FUNCTION_CALL", &model.Response{FinishReason: model.FinishReasonMalformedFunctionCall, ErrorCode: model.FinishReasonMalformedFunctionCall}, taxonomy.ToolProtocol},
		{"UNEXPECTED_TOOL_CALL", &model.Response{FinishReason: model.FinishReasonUnexpectedToolCall}, taxonomy.ToolProtocol},
		{"TOO_MANY_TOOL_CALLS", &model.Response{FinishReason: model.FinishReasonTooManyToolCalls}, taxonomy.ToolProtocol},
		{"LANGUAGE", &model.Response{FinishReason: model.FinishReasonLanguage}, taxonomy.Unknown},
		{"OTHER", &model.Response{FinishReason: model.FinishReasonOther}, taxonomy.Unknown},
		{"finish reason from the future", &model.Response{Content: text, FinishReason: "NEW_REASON_2030"}, taxonomy.Unknown},
		{"block reason SAFETY without candidate", &model.Response{ErrorCode: model.FinishReasonSafety}, taxonomy.PromptBlocked},
		{"block reason JAILBREAK without candidate", &model.Response{ErrorCode: "JAILBREAK"}, taxonomy.PromptBlocked},
		{"unspecified block reason", &model.Response{ErrorCode: model.BlockReasonUnspecified}, taxonomy.Unknown},
		{"empty response", &model.Response{}, taxonomy.Unknown},
		{"empty parts", &model.Response{Content: &model.Content{Role: model.RoleModel, Parts: []*model.Part{{}, nil}}}, taxonomy.Unknown},
		{"only an error message", &model.Response{ErrorMessage: "something odd"}, taxonomy.Unknown},
		{"nil", nil, taxonomy.Unknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, failed := taxonomy.ClassifyResponse(tc.resp)
			if failed != (tc.want != healthy) || got != tc.want {
				t.Fatalf("ClassifyResponse = (%q, %v), want %q", got, failed, tc.want)
			}
		})
	}
}

func TestFailureFromResponse_KeepsRaw(t *testing.T) {
	r := &model.Response{FinishReason: model.FinishReasonSafety, ErrorCode: model.FinishReasonSafety, ErrorMessage: "The response was blocked: HARM_CATEGORY_HARASSMENT"}
	f, failed := taxonomy.FailureFromResponse("gemini-2.5-flash", r)
	if !failed {
		t.Fatal("SAFETY reported healthy")
	}
	want := taxonomy.Failure{Class: taxonomy.OutputBlocked, Channel: taxonomy.ChannelInBand, Raw: r.ErrorMessage, Model: "gemini-2.5-flash", Code: "SAFETY"}
	if f != want {
		t.Fatalf("got %+v, want %+v", f, want)
	}
	if _, failed := taxonomy.FailureFromResponse("m", &model.Response{Content: model.NewTextContent(model.RoleModel, "ok"), FinishReason: model.FinishReasonStop}); failed {
		t.Fatal("healthy response reported as failure")
	}
	f, _ = taxonomy.FailureFromResponse("m", &model.Response{})
	if f.Class != taxonomy.Unknown || f.Raw == "" {
		t.Fatalf("empty response: %+v, want UNKNOWN with a non-empty raw note", f)
	}
}
