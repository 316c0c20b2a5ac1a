package model

// Response is one response of a model call. A non-streaming call yields one;
// a streaming call yields Partial deltas followed by one complete,
// non-partial Response (see Aggregator).
type Response struct {
	// Content is the candidate's content; nil when no candidate came back.
	Content *Content `json:"content,omitempty"`
	// Partial marks a streaming delta. Partial responses are shown to the
	// caller but never stored or sent back to the model.
	Partial bool `json:"partial,omitempty"`
	// TurnComplete marks the last response of the model's turn.
	TurnComplete bool `json:"turn_complete,omitempty"`
	// FinishReason is the candidate's finish reason, copied whenever a
	// candidate came back ("" when none did or the provider sent none).
	FinishReason FinishReason `json:"finish_reason,omitempty"`
	// ErrorCode is set for in-band failures: a candidate with no parts that
	// did not stop normally (its finish reason), or no candidate at all (the
	// prompt's block reason, or ErrorCodeUnknown).
	ErrorCode FinishReason `json:"error_code,omitempty"`
	// ErrorMessage is the provider's raw message for ErrorCode, kept
	// verbatim beside whatever class a classifier assigns.
	ErrorMessage string `json:"error_message,omitempty"`
	// Usage is token accounting, when the provider reports it.
	Usage *Usage `json:"usage,omitempty"`
	// ProviderRequestID is the provider's id for the HTTP request, for
	// support tickets and log correlation.
	ProviderRequestID string `json:"provider_request_id,omitempty"`
	// ModelVersion is the model version the provider says answered.
	ModelVersion string `json:"model_version,omitempty"`
}

// Usage is token accounting for one model call.
type Usage struct {
	PromptTokens     int32 `json:"prompt_tokens,omitempty"`     // PromptTokens is the number of input tokens.
	CandidatesTokens int32 `json:"candidates_tokens,omitempty"` // CandidatesTokens is the number of output tokens.
	TotalTokens      int32 `json:"total_tokens,omitempty"`      // TotalTokens is the total token count of the call.
}

// FunctionCalls returns the function calls in the response content.
func (r *Response) FunctionCalls() []*FunctionCall {
	if r == nil {
		return nil
	}
	return r.Content.FunctionCalls()
}
