package taxonomy

import "github.com/agentfleet/agentfleet/pkg/agent/model"

// ClassifyResponse classifies a model response (the in-band channel). It
// returns ("", false) for a healthy response.
//
// The finish reason is read first, because a candidate came back and its
// reason wins (a SAFETY stop with no text has both fields set to SAFETY;
// reading the error code first would misfile it as a blocked prompt):
//
//	STOP, FINISH_REASON_UNSPECIFIED                       → healthy
//	MAX_TOKENS, CONTINUATION                              → TRUNCATED
//	SAFETY, RECITATION, BLOCKLIST, PROHIBITED_CONTENT,
//	SPII, IMAGE_SAFETY, IMAGE_PROHIBITED_CONTENT,
//	IMAGE_RECITATION                                      → OUTPUT_BLOCKED
//	MALFORMED_FUNCTION_CALL, UNEXPECTED_TOOL_CALL,
//	TOO_MANY_TOOL_CALLS                                   → TOOL_PROTOCOL
//	anything else (LANGUAGE, OTHER, a value we do not know) → UNKNOWN
//
// Only when there is no finish reason does ErrorCode speak, and then it
// means no candidate came back: ErrorCodeUnknown ("Unknown error.") or an
// unspecified block reason is UNKNOWN, any other value is PROMPT_BLOCKED.
// With neither, a response that carries no content is UNKNOWN (an empty
// answer is not a success), and one with content is healthy.
//
// A nil response is UNKNOWN. A Partial response (a streaming delta) is
// always healthy: the verdict comes with the final response.
func ClassifyResponse(r *model.Response) (Class, bool) {
	if r == nil {
		return Unknown, true
	}
	if r.Partial {
		return "", false
	}
	if r.FinishReason != "" {
		return classifyFinishReason(r.FinishReason)
	}
	if r.ErrorCode != "" {
		switch r.ErrorCode {
		case model.ErrorCodeUnknown, model.FinishReasonUnspecified, model.BlockReasonUnspecified:
			return Unknown, true
		default:
			return PromptBlocked, true
		}
	}
	if r.Content.IsEmpty() {
		return Unknown, true
	}
	return "", false
}

func classifyFinishReason(fr model.FinishReason) (Class, bool) {
	switch fr {
	case model.FinishReasonStop, model.FinishReasonUnspecified:
		return "", false
	case model.FinishReasonMaxTokens, model.FinishReasonContinuation:
		// CONTINUATION: the token limit cut the output, which could be
		// continued; nothing here continues it, so it is cut off.
		return Truncated, true
	case model.FinishReasonSafety, model.FinishReasonRecitation, model.FinishReasonBlocklist,
		model.FinishReasonProhibitedContent, model.FinishReasonSPII, model.FinishReasonImageSafety,
		model.FinishReasonImageProhibitedContent, model.FinishReasonImageRecitation:
		// The IMAGE_ reasons are the image-output forms of SAFETY,
		// PROHIBITED_CONTENT and RECITATION (found in review, twenty-first
		// session: they were UNKNOWN, dead-lettered for review).
		return OutputBlocked, true
	case model.FinishReasonMalformedFunctionCall, model.FinishReasonUnexpectedToolCall,
		model.FinishReasonTooManyToolCalls:
		return ToolProtocol, true
	default:
		return Unknown, true
	}
}
