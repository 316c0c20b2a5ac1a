package openai

import "github.com/openai/openai-go/v3"

// streamUsage reduces the usage objects of a stream's chunks to the call's
// usage. Servers report it in three ways:
//
//   - once, on a last chunk with no choices (OpenAI with include_usage);
//   - a running total on every chunk (Gemini's OpenAI-compatible endpoint,
//     vLLM with continuous usage stats, Together, DeepSeek), where each
//     object is the total so far, so summing them multiplies the usage by
//     the number of chunks (found in review, twenty-third session);
//   - split over chunks, prompt tokens early and completion tokens last
//     (gateways that translate Anthropic's message_start and message_delta
//     usage), where the last object alone loses the prompt tokens (left
//     open in the twenty-third session, fixed in the twenty-fourth).
//
// One rule serves all three: each field is the latest non-zero value any
// chunk gave it. A zero is read as "not reported" (a chunk's "usage":
// null, or a field the chunk left out), never as a count that went back
// to zero. The SDK's ChatCompletionAccumulator adds the chunks' usage up,
// right for none of these but the first, so its Usage is replaced by this
// one.
type streamUsage struct {
	u openai.CompletionUsage
}

// add takes a chunk's usage into account.
func (s *streamUsage) add(u openai.CompletionUsage) {
	latest(&s.u.PromptTokens, u.PromptTokens)
	latest(&s.u.CompletionTokens, u.CompletionTokens)
	latest(&s.u.TotalTokens, u.TotalTokens)
	latest(&s.u.PromptTokensDetails.AudioTokens, u.PromptTokensDetails.AudioTokens)
	latest(&s.u.PromptTokensDetails.CachedTokens, u.PromptTokensDetails.CachedTokens)
	latest(&s.u.CompletionTokensDetails.AcceptedPredictionTokens, u.CompletionTokensDetails.AcceptedPredictionTokens)
	latest(&s.u.CompletionTokensDetails.AudioTokens, u.CompletionTokensDetails.AudioTokens)
	latest(&s.u.CompletionTokensDetails.ReasoningTokens, u.CompletionTokensDetails.ReasoningTokens)
	latest(&s.u.CompletionTokensDetails.RejectedPredictionTokens, u.CompletionTokensDetails.RejectedPredictionTokens)
}

// usage returns the reduced usage. Its total is at least the prompt and
// completion tokens together: fields taken from different chunks can give
// a smaller one (no total at all, or the last chunk's total of its
// completion tokens alone).
func (s *streamUsage) usage() openai.CompletionUsage {
	u := s.u
	p, c := u.PromptTokens, u.CompletionTokens
	if p >= 0 && c >= 0 && p+c >= p && u.TotalTokens < p+c {
		u.TotalTokens = p + c
	}
	return u
}

// latest sets *dst to v unless v is zero (not reported).
func latest(dst *int64, v int64) {
	if v != 0 {
		*dst = v
	}
}
