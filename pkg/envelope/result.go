package envelope

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Status is a result's outcome.
type Status string

// Result statuses (DESIGN.md). Every request ends in exactly one of them.
const (
	StatusCompleted    Status = "completed"
	StatusFailed       Status = "failed"
	StatusDeadLettered Status = "dead_lettered"
)

// Result is what a worker publishes to agent.results.<invocation_id>.
type Result struct {
	V            int    `json:"v"`             // V is the envelope schema version; must equal Version.
	InvocationID string `json:"invocation_id"` // InvocationID is the invocation this result is for.
	Status       Status `json:"status"`        // Status is the invocation's outcome.
	// Content is the agent's final text (completed), or empty.
	Content string `json:"content,omitempty"`
	// ErrorClass is the taxonomy class of the failure, if any.
	ErrorClass string `json:"error_class,omitempty"`
	// UserMessage is what to tell the user: for a dead-lettered transient
	// failure that the request is queued, for CALL_BUDGET that a person will
	// follow up, for a failure that it was not completed.
	UserMessage string `json:"user_message,omitempty"`
	// Truncated is set when the final response hit the output limit, or
	// was cut to fit one NATS message (the server's max_payload).
	Truncated bool `json:"truncated,omitempty"`
	// ModelCalls is the number of model calls of the invocation.
	ModelCalls int `json:"model_calls"`
	// Attempts is the message's delivery count when it finished.
	Attempts int `json:"attempts"`
	// ToolsRun lists the tools that completed, in order: the most recent
	// ones, at most 4 KiB of names (as a DLQ entry's tools_completed), when
	// the invocation completed more.
	ToolsRun []string `json:"tools_run,omitempty"`
	// ToolsRunOmitted is how many of the earliest completed tools ToolsRun
	// leaves out to stay within its bound. Optional: 0 (absent) when none
	// were.
	ToolsRunOmitted int   `json:"tools_run_omitted,omitempty"`
	DurationMS      int64 `json:"duration_ms"` // DurationMS is the handling time in milliseconds.
}

// DecodeResult decodes a result envelope.
func DecodeResult(data []byte) (*Result, error) {
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("envelope: decode result: %w", err)
	}
	if r.V != Version {
		return nil, fmt.Errorf("envelope: result schema version %d, want %d", r.V, Version)
	}
	switch r.Status {
	case StatusCompleted, StatusFailed, StatusDeadLettered:
	default:
		return nil, fmt.Errorf("envelope: result status %q unknown", r.Status)
	}
	return &r, nil
}

// Encode returns the result's JSON, setting V if it is zero. Invalid UTF-8
// in its strings (a model's text) is replaced first (ReplaceInvalidUTF8),
// so that a result decoded from its encoding encodes to the same bytes
// again (the worker compares and de-duplicates published results by
// their bytes).
func (r *Result) Encode() ([]byte, error) {
	if r.V == 0 {
		r.V = Version
	}
	r.ReplaceInvalidUTF8()
	return json.Marshal(r)
}

// ReplaceInvalidUTF8 replaces each run of invalid UTF-8 bytes in the
// result's strings with one U+FFFD, as Encode does. encoding/json replaces
// each bad byte instead: a caller that stores the result with its own
// json.Marshal calls this first, so that what it stores encodes to the
// bytes Encode publishes. Valid strings are left as they are.
func (r *Result) ReplaceInvalidUTF8() {
	for _, s := range []*string{&r.Content, &r.UserMessage, &r.ErrorClass} {
		*s = strings.ToValidUTF8(*s, "\uFFFD")
	}
	for i := range r.ToolsRun {
		r.ToolsRun[i] = strings.ToValidUTF8(r.ToolsRun[i], "\uFFFD")
	}
}
