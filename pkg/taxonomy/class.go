package taxonomy

import "fmt"

// Class is a failure class of a model call. The string value is stable: it
// appears in session state, DLQ subjects, metric labels and dashboards.
type Class string

// The failure classes. Each has exactly one row in the policy table.
const (
	// Transport is a network failure: connection reset or refused, broken
	// pipe, unexpected EOF.
	Transport Class = "TRANSPORT"
	// Timeout is a deadline that passed: a client or server timeout (HTTP
	// 408/504, context.DeadlineExceeded, a net.Error reporting Timeout).
	Timeout Class = "TIMEOUT"
	// RateLimited is an HTTP 429 that waiting a little fixes (a per-minute
	// quota, overload shedding).
	RateLimited Class = "RATE_LIMITED"
	// QuotaExhausted is an HTTP 429 whose structured details say a quota is
	// spent (per day, billing): waiting seconds does not fix it.
	QuotaExhausted Class = "QUOTA_EXHAUSTED"
	// Server is a provider-side failure (HTTP 5xx, 409, 529 overloaded).
	Server Class = "SERVER"
	// BadRequest is a request the provider rejects as invalid (400, 413).
	BadRequest Class = "BAD_REQUEST"
	// Auth is a missing, revoked or unauthorised credential (401, 403).
	Auth Class = "AUTH"
	// NotFound is an unknown model or resource (404), typically a
	// deprecated model name in configuration, or an endpoint address that
	// is wrong: a host name that does not exist, an https URL for a
	// plain-HTTP server or for a port that does not speak TLS.
	NotFound Class = "NOT_FOUND"
	// PromptBlocked is a prompt the provider refused to answer (no
	// candidate came back, the prompt feedback names a block reason).
	PromptBlocked Class = "PROMPT_BLOCKED"
	// OutputBlocked is a candidate stopped by a safety, recitation,
	// blocklist or similar filter.
	OutputBlocked Class = "OUTPUT_BLOCKED"
	// Truncated is a candidate cut off by the output token limit.
	Truncated Class = "TRUNCATED"
	// ToolProtocol is a model that broke the function-calling protocol
	// (malformed call, unexpected call, too many calls).
	ToolProtocol Class = "TOOL_PROTOCOL"
	// CallBudget is an invocation that exceeded its model-call budget
	// (*model.CallBudgetError): usually a model looping on tool calls.
	CallBudget Class = "CALL_BUDGET"
	// Unknown is anything not classified: never retried, kept for review.
	Unknown Class = "UNKNOWN"
	// BadInput is a request the worker could not run at all (undecodable,
	// schema violation, unknown agent, too large). The classifiers never
	// return it; the worker assigns it.
	BadInput Class = "BAD_INPUT"
)

// Canceled is what ClassifyError returns for an error caused by
// cancellation (context.Canceled anywhere in the chain). It is NOT a failure
// class: it has no row in the policy table, Valid reports false for it, and
// callers must not dead-letter, count or degrade it. The cancelling party
// (a shutting-down worker, a caller that went away) decides what happens.
// IsCanceled is the direct test.
const Canceled Class = "CANCELED"

// Channel says how a failure surfaced.
type Channel string

// The two channels.
const (
	// ChannelThrown is a Go error ending the model call.
	ChannelThrown Channel = "thrown"
	// ChannelInBand is a response that carries a failure.
	ChannelInBand Channel = "in_band"
)

// Classes returns every failure class, in policy-table order. Canceled is
// not included.
func Classes() []Class {
	out := make([]Class, len(policyTable))
	for i, p := range policyTable {
		out[i] = p.Class
	}
	return out
}

// Valid reports whether c is a failure class with a row in the policy
// table.
func (c Class) Valid() bool {
	_, ok := Lookup(c)
	return ok
}

// String returns the class name.
func (c Class) String() string { return string(c) }

// ParseClass returns the failure class named s (exact, upper case), or an
// error when s names none. Canceled is not accepted.
func ParseClass(s string) (Class, error) {
	c := Class(s)
	if !c.Valid() {
		return "", fmt.Errorf("taxonomy: unknown failure class %q", s)
	}
	return c, nil
}
