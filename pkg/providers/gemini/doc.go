// Package gemini adapts the Gemini API, through Google's official SDK
// google.golang.org/genai, to the model.Model contract.
//
// The adapter makes exactly one HTTP request per GenerateContent call: the
// SDK's HTTP retries are switched off (HTTPRetryOptions.Attempts = 1) and so
// is its automatic stream continuation (which reconnects after dropped
// streams). Retrying belongs to one layer only, the model decorator above
// this adapter.
//
// Responses are built the way ADK builds an LlmResponse from a Gemini
// response, so that pkg/taxonomy can classify both failure channels:
//
//   - a candidate's finish reason is always copied, verbatim (reasons this
//     code base does not name are kept as model.FinishReason(string));
//   - a candidate with no usable parts that did not stop normally (finish
//     reason other than STOP) also sets ErrorCode to its finish reason and
//     ErrorMessage to its finish message;
//   - with no candidate, ErrorCode is the prompt feedback's block reason, or
//     model.ErrorCodeUnknown when there is none, and ErrorMessage the block
//     reason message (or "Unknown error.").
//
// Thrown errors are the SDK's own: a non-2xx response is a genai.APIError
// (a value, not a pointer), transport failures are whatever net/http
// returned; both are wrapped with %w and never swallowed.
//
// No error the adapter returns holds its configured API key (a server set
// as Config.BaseURL may quote the key it refused, as a LiteLLM proxy does;
// a key shorter than model.MinRedactedKeyLen is a placeholder and is left
// alone): every occurrence is replaced by model.RedactedKey in the returned
// error's text, in the genai.APIError it carries (Message, Status and the
// strings of Details; a redacted copy replaces the SDK's) and in the
// *model.ProviderError's Message.
package gemini
