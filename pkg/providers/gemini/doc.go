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
// returned; both are wrapped with %w and never swallowed. One exception: a
// stream whose body breaks off after its last chunk (the one with the
// finish reason, and the usage; or a blocked prompt's feedback, with its
// block reason) has delivered its whole answer, and ends with the final
// response as a clean stream would; an error event the server sends after
// that chunk stays an error, even one cut short. An error response whose
// body has no HTTP error code, or whose body broke off before the SDK
// could read it, is wrapped in a *model.ProviderError with the response's
// status, which decides the class (a 429 whose body is cut is
// RATE_LIMITED, not TRANSPORT); its Message is the SDK's error text, so
// the provider's message stays in the error's text.
//
// The adapter's HTTP client refuses a redirect that leaves the configured
// endpoint's origin (its scheme, host name and port, default ports filled
// in: so also one to another port of the same host, or from https to
// http), which would carry the API key (x-goog-api-key) there
// (ErrRedirectRefused, classified UNKNOWN); a Config.HTTPClient's own
// CheckRedirect still applies to the redirects it allows. Without one, a
// chain of more than ten redirects stops with ErrTooManyRedirects, the same
// kind of error.
//
// A stream read through a gateway (Config.BaseURL) may carry what the
// server-sent events format allows and the SDK's stream reader fails on:
// comment lines (": keep-alive"), the fields "event", "id" and "retry",
// and an OpenAI-style "data: [DONE]"; they are ignored, as the format
// says. A function response's json.Number that a float64 cannot hold
// (1e400: a tool's result read back from a store), which the SDK would
// send as null, is sent as its decimal text, a JSON string.
//
// Usage counts a thinking model's thoughts (thoughtsTokenCount) among the
// output tokens, model.Usage.CandidatesTokens, and a built-in tool's
// prompt (toolUsePromptTokenCount) among the input tokens,
// model.Usage.PromptTokens: the two add up to TotalTokens.
//
// No error the adapter returns holds its configured API key (a server set
// as Config.BaseURL may quote the key it refused, as a LiteLLM proxy does;
// a key shorter than model.MinRedactedKeyLen is a placeholder and is left
// alone): every occurrence is replaced by model.RedactedKey in the returned
// error's text, in the genai.APIError it carries (Message, Status and the
// strings of Details; a redacted copy replaces the SDK's) and in the
// *model.ProviderError's Message.
package gemini
