// Package taxonomy classifies failed and unhealthy model calls into a small,
// fixed set of classes and maps each class to exactly one handling rule.
//
// A model call can fail through two channels:
//
//   - thrown: GenerateContent ends with a Go error (an HTTP error from a
//     provider SDK, a network failure, a call-budget refusal). ClassifyError
//     walks the error's cause chain with errors.As, most specific type first.
//   - in band: the call succeeds but the response carries bad news (a
//     safety stop, truncation, a blocked prompt, an empty answer).
//     ClassifyResponse reads the finish reason first and the error code only
//     when no candidate came back.
//
// Neither classifier ever looks at message text: messages change without
// notice and are localised. The raw message is kept beside the class in a
// Failure, for logs and review.
//
// The policy table (Policies, PolicyFor) is the single source of truth for
// what happens to each class: whether the retry decorator (package retry)
// retries it, whether the on-model-error callback degrades it, whether it
// pages, dead-letters or is replayed automatically, and which dashboard view
// it belongs to. Code that needs a rule reads the table; nothing keeps a
// second copy.
//
// AfterModel and OnModelError are ready-made agent callbacks that classify,
// record (session state, Prometheus counters, a log line) and substitute a
// response where the table says so.
package taxonomy
