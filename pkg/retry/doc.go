// Package retry is the one retry layer for model calls: a model.Model
// decorator that retries the failure classes the taxonomy's policy table
// marks Retryable (TRANSPORT, TIMEOUT, RATE_LIMITED, SERVER) and nothing
// else.
//
// A call is retried only while all of these hold:
//
//   - no response of the call has been yielded yet (a stream that broke
//     after partial output is never replayed: the caller would see text
//     twice and an emitted tool call could run twice);
//   - the error's class is Retryable (in-band failures are responses, not
//     errors, and are never retried);
//   - the attempt limit (Config.MaxAttempts) is not reached;
//   - the model's retry budget has tokens (gRPC retry-throttling
//     semantics, see Budget), so a full outage costs about one provider
//     attempt per call instead of MaxAttempts;
//   - a server hint (Retry-After, retry-after-ms, Gemini RetryInfo,
//     ProviderError.RetryAfter) is not above Config.MaxHint: a longer hint
//     fails fast instead of sleeping;
//   - the wait fits in the context's deadline: one deadline covers every
//     attempt, and no attempt starts that the deadline cannot wait for.
//
// Waits follow an exponential schedule from github.com/cenkalti/backoff/v4
// with full jitter. When the server sent a hint, the wait is the hint plus
// a random spread of up to a fifth of it (never shorter than the server
// asked; the spread is left out when only the hint fits the deadline), so
// the workers one rate limit refused do not all come back at once.
//
// Model-call budget semantics are selectable (Config.Accounting): by default
// the attempts inside one call count as one model call (ADK Java's
// behaviour: the budget limits reasoning steps); with PerAttempt every retry
// is also charged to the invocation's model.CallBudget (the view of ADK Java
// PR 1413: the budget limits provider requests).
package retry
