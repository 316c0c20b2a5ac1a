package envelope

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// Version is the schema version this package writes and reads.
const Version = 1

// DefaultMaxSize is the default size limit of a request envelope: 1 MiB
// less 16 KiB (1,032,192 bytes). Under NATS's default max_payload of 1 MiB
// that leaves room for a dead letter's headers and its own fields, so a
// request that fails is dead-lettered whole and can be replayed (a larger
// one would be cut, see dlq.MaxWholeRequest, and a cut request cannot be
// replayed).
const DefaultMaxSize = 1<<20 - 16<<10

// Headers set on request messages.
const (
	// HeaderMsgID is JetStream's de-duplication header; requests carry the
	// invocation id in it.
	HeaderMsgID = "Nats-Msg-Id"
	// HeaderResume marks a replayed request ("true"): the worker resumes the
	// invocation from its session events.
	HeaderResume = "Agent-Resume"
	// HeaderReplayCount counts how often the request was replayed from the
	// dead-letter stream.
	HeaderReplayCount = "Agent-Replay-Count"
	// HeaderFreshBudget ("true"), on a replay, starts the resumed
	// invocation's model-call budget at zero instead of charging the calls of
	// its earlier runs. The replayer sets it on CALL_BUDGET entries, which it
	// replays only when a person forces it after fixing the loop; without it
	// such a replay would hit the budget again on its first call. It is
	// ignored on requests that are not replays.
	HeaderFreshBudget = "Agent-Fresh-Budget"
)

// Request is what a producer publishes: one user message for one agent.
type Request struct {
	V            int               `json:"v"`                  // V is the envelope schema version; must equal Version.
	InvocationID string            `json:"invocation_id"`      // InvocationID identifies the invocation; also the de-duplication id.
	Agent        string            `json:"agent"`              // Agent names the agent that should handle the message.
	UserID       string            `json:"user_id"`            // UserID identifies the user (UTF-8, at most 256 bytes).
	SessionID    string            `json:"session_id"`         // SessionID identifies the conversation session (UTF-8, at most 256 bytes).
	Message      *model.Content    `json:"message"`            // Message is the user's message; text parts only (no thought_signature).
	Metadata     map[string]string `json:"metadata,omitempty"` // Metadata carries optional producer-supplied key/value pairs.
}

// An id becomes a subject token (agent.results.<invocation_id>,
// agent.requests.<agent>) and a key segment, so no dots, wildcards or white
// space: 1 to 128 of A-Z, a-z, 0-9, '_' and '-' (the regular expression
// ^[A-Za-z0-9_\-]{1,128}$, which FuzzValidID checks ValidID against; the
// loop is what the worker runs several times per message).
const maxIDLen = 128

// ValidID reports whether s can be used as an invocation id or agent name.
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > maxIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// InvalidError is returned for input that can never be processed: the worker
// dead-letters it as BAD_INPUT and terminates the message. Reason is short,
// stable and safe to show.
type InvalidError struct {
	Reason string // Reason says why the input was rejected.
}

// Error implements error.
func (e *InvalidError) Error() string { return "invalid envelope: " + e.Reason }

func invalid(format string, args ...any) error {
	return &InvalidError{Reason: fmt.Sprintf(format, args...)}
}

// DecodeRequest decodes and validates a request envelope. maxSize <= 0 means
// DefaultMaxSize. Every failure is an *InvalidError.
func DecodeRequest(data []byte, maxSize int) (*Request, error) {
	if maxSize <= 0 {
		maxSize = DefaultMaxSize
	}
	if len(data) > maxSize {
		return nil, invalid("request is %d bytes, limit %d", len(data), maxSize)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, invalid("empty request")
	}
	if !utf8.Valid(data) {
		// JSON is UTF-8 (RFC 8259 §8.1). encoding/json would read the
		// bad bytes as U+FFFD and run another text than was sent, and a
		// dead letter could only keep the bytes base64-encoded, a third
		// larger: near the size limit, cut and never replayable.
		return nil, invalid("request is not valid UTF-8 (JSON must be)")
	}
	var r Request
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, invalid("not a JSON request object")
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &r, nil
}

// Validate checks a request's version and required fields. A user or
// session id must be valid UTF-8: encoding/json would write its invalid
// bytes as U+FFFD, and the worker would read another id (distinct ids
// becoming one session, or one longer than the limit). The message's parts
// must be text only: a function call or response, or a thought_signature
// (provider state), is refused.
func (r *Request) Validate() error {
	switch {
	case r.V != Version:
		return invalid("unsupported schema version %d (this worker reads %d)", r.V, Version)
	case !ValidID(r.InvocationID):
		return invalid("invocation_id missing or not [A-Za-z0-9_-]{1,128}")
	case !ValidID(r.Agent):
		return invalid("agent missing or not [A-Za-z0-9_-]{1,128}")
	case r.UserID == "" || len(r.UserID) > 256:
		return invalid("user_id missing or longer than 256 bytes")
	case r.SessionID == "" || len(r.SessionID) > 256:
		return invalid("session_id missing or longer than 256 bytes")
	case !utf8.ValidString(r.UserID):
		return invalid("user_id is not valid UTF-8")
	case !utf8.ValidString(r.SessionID):
		return invalid("session_id is not valid UTF-8")
	case r.Message == nil || r.Message.Text() == "":
		return invalid("message has no text part")
	}
	for _, p := range r.Message.Parts {
		if p == nil || p.FunctionCall != nil || p.FunctionResponse != nil {
			return invalid("message parts must be text")
		}
		// A thought signature is a provider's state, never the user's: it
		// would be stored with the session's events and sent back to the
		// model with every later turn of the session.
		if len(p.ThoughtSignature) > 0 {
			return invalid("message parts must be text (a part carries a thought_signature, which only a model's turn may)")
		}
	}
	if r.Message.Role != "" && r.Message.Role != model.RoleUser {
		return invalid("message role must be %q", model.RoleUser)
	}
	// A decoded request holds valid UTF-8 only (DecodeRequest refuses the
	// rest); one built in Go may not, and its JSON would carry U+FFFD
	// where the caller's bytes were: another text than was meant.
	for _, p := range r.Message.Parts {
		if !utf8.ValidString(p.Text) {
			return invalid("message text is not valid UTF-8")
		}
	}
	for k, v := range r.Metadata {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return invalid("metadata is not valid UTF-8")
		}
	}
	return nil
}

// Encode returns the request's JSON, setting V if it is zero.
func (r *Request) Encode() ([]byte, error) {
	if r.V == 0 {
		r.V = Version
	}
	return json.Marshal(r)
}
