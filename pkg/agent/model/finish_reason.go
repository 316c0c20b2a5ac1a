package model

// FinishReason is why a candidate stopped, in the Gemini vocabulary. It is a
// string so that a value this package does not know is kept exactly as the
// provider sent it, never dropped or coerced. The same type carries
// Response.ErrorCode, whose values are finish reasons, prompt-feedback block
// reasons, or ErrorCodeUnknown.
type FinishReason string

// The Gemini finish-reason vocabulary (and block reasons, which share it).
const (
	FinishReasonUnspecified           FinishReason = "FINISH_REASON_UNSPECIFIED"
	FinishReasonStop                  FinishReason = "STOP"
	FinishReasonMaxTokens             FinishReason = "MAX_TOKENS"
	FinishReasonSafety                FinishReason = "SAFETY"
	FinishReasonRecitation            FinishReason = "RECITATION"
	FinishReasonLanguage              FinishReason = "LANGUAGE"
	FinishReasonOther                 FinishReason = "OTHER"
	FinishReasonBlocklist             FinishReason = "BLOCKLIST"
	FinishReasonProhibitedContent     FinishReason = "PROHIBITED_CONTENT"
	FinishReasonSPII                  FinishReason = "SPII"
	FinishReasonMalformedFunctionCall FinishReason = "MALFORMED_FUNCTION_CALL"
	FinishReasonImageSafety           FinishReason = "IMAGE_SAFETY"
	FinishReasonUnexpectedToolCall    FinishReason = "UNEXPECTED_TOOL_CALL"
	FinishReasonTooManyToolCalls      FinishReason = "TOO_MANY_TOOL_CALLS"
	// FinishReasonContinuation: the per-request token limit ended the
	// output before it was complete (Gemini offers a continuation token;
	// the adapter turns automatic continuation off). Cut off like
	// MAX_TOKENS.
	FinishReasonContinuation FinishReason = "CONTINUATION"
	// FinishReasonImageProhibitedContent: a generated image was withheld
	// as prohibited content (the image form of PROHIBITED_CONTENT).
	FinishReasonImageProhibitedContent FinishReason = "IMAGE_PROHIBITED_CONTENT"
	// FinishReasonImageRecitation: a generated image was withheld as a
	// recitation (the image form of RECITATION).
	FinishReasonImageRecitation FinishReason = "IMAGE_RECITATION"
	// BlockReasonUnspecified is the prompt-feedback block reason for "none".
	BlockReasonUnspecified FinishReason = "BLOCKED_REASON_UNSPECIFIED"
)

// ErrorCodeUnknown is the sentinel ErrorCode for a response that came back
// with no candidate and no block reason (ADK's "Unknown error.").
const ErrorCodeUnknown FinishReason = "Unknown error."

// KnownFinishReasons lists the finish reasons this package names, for
// documentation and fuzz seeds.
var KnownFinishReasons = []FinishReason{
	FinishReasonUnspecified, FinishReasonStop, FinishReasonMaxTokens,
	FinishReasonSafety, FinishReasonRecitation, FinishReasonLanguage,
	FinishReasonOther, FinishReasonBlocklist, FinishReasonProhibitedContent,
	FinishReasonSPII, FinishReasonMalformedFunctionCall, FinishReasonImageSafety,
	FinishReasonUnexpectedToolCall, FinishReasonTooManyToolCalls, FinishReasonContinuation,
	FinishReasonImageProhibitedContent, FinishReasonImageRecitation,
}

// ToolProtocol reports whether r says the model broke the function-calling
// protocol (a malformed call, a call of no declared tool, too many calls):
// the TOOL_PROTOCOL class, which the model may correct by being asked again.
func (r FinishReason) ToolProtocol() bool {
	return r == FinishReasonMalformedFunctionCall || r == FinishReasonUnexpectedToolCall || r == FinishReasonTooManyToolCalls
}

// Known reports whether r is one of the named constants.
func (r FinishReason) Known() bool {
	for _, k := range KnownFinishReasons {
		if r == k {
			return true
		}
	}
	return false
}
