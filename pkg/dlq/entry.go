package dlq

import (
	"bytes"
	"encoding/json"
	"time"
	"unicode/utf8"
)

// Version is the entry schema version this package writes and reads.
const Version = 1

// Entry is one dead-lettered invocation (DESIGN.md "DLQ entry").
//
// The original request is kept so that a replay can republish it:
//   - Request holds it when it is valid UTF-8 JSON (the usual case, and every
//     decodable request). It is the same JSON value; white space may be
//     compacted by the encoder.
//   - RequestRaw holds it byte for byte otherwise (BAD_INPUT: not JSON,
//     truncated, invalid UTF-8); it is base64 in the JSON.
//
// At most one of the two is set; OriginalRequest returns whichever is. When
// the entry would exceed the server's max payload (or MaxStoredEntry, what a
// file store takes), the Publisher keeps a prefix of the request in
// RequestRaw and sets RequestTruncated, RequestSize and RequestSHA256.
type Entry struct {
	// V is the schema version (Version).
	V int `json:"v"`
	// InvocationID is the request's invocation id or, for a request without
	// a valid one, one derived from its stream sequence (DerivedInvocationID).
	InvocationID string `json:"invocation_id"`
	// Agent is the agent the request named, or UnknownAgent.
	Agent string `json:"agent"`
	// Class is the failure class, a taxonomy.Class name such as SERVER or
	// BAD_INPUT. It is a plain string so that the entry format does not
	// depend on the classifiers and the provider SDKs they import.
	Class string `json:"class"`
	// Reason says what failed; the Publisher sanitises it
	// (tool.SanitizeString: one line, no hosts, URLs or stack frames).
	Reason string `json:"reason"`
	// Retryable says whether a replay can succeed without a fix.
	Retryable bool `json:"retryable"`
	// DeliveryCount is the request message's delivery count at the failure.
	DeliveryCount uint64 `json:"delivery_count"`
	// ReplayCount is how often the request had been replayed from the DLQ
	// before this failure (its Agent-Replay-Count header, 0 at first). It is
	// the n of the entry's Nats-Msg-Id.
	ReplayCount int `json:"replay_count"`
	// FirstFailedAt is when the invocation first failed (the first entry's
	// FailedAt across replays).
	FirstFailedAt time.Time `json:"first_failed_at"`
	// FailedAt is when this failure happened.
	FailedAt time.Time `json:"failed_at"`
	// Worker names the worker instance that dead-lettered the request.
	Worker string `json:"worker"`
	// Model is the model the invocation used, if one was called.
	Model string `json:"model,omitempty"`
	// ToolsCompleted lists the tools that completed before the failure, in
	// order. EncodeToFit keeps only its last (most recent) names within
	// MaxToolsCompletedSize and counts the others in ToolsCompletedOmitted.
	ToolsCompleted []string `json:"tools_completed"`
	// ToolsCompletedOmitted is how many of the earliest completed tools
	// were left out of ToolsCompleted to keep it within
	// MaxToolsCompletedSize. Optional: 0 (absent) when none were, and in
	// entries written before the field existed.
	ToolsCompletedOmitted int `json:"tools_completed_omitted,omitempty"`

	// Request is the original request envelope (see the type comment).
	Request json.RawMessage `json:"request,omitempty"`
	// RequestRaw is the original request when it is not valid UTF-8 JSON,
	// or a prefix of it when RequestTruncated.
	RequestRaw []byte `json:"request_raw,omitempty"`
	// RequestSize is the original request's size in bytes.
	RequestSize int `json:"request_size"`
	// RequestTruncated is set when only a prefix of the request fits.
	RequestTruncated bool `json:"request_truncated,omitempty"`
	// RequestSHA256 is the hex SHA-256 of the whole original request, set
	// when RequestTruncated.
	RequestSHA256 string `json:"request_sha256,omitempty"`
	// SourceSeq is the request's stream sequence in AGENT_REQUESTS, when
	// known; it derives the invocation id of a request that has none.
	SourceSeq uint64 `json:"source_seq,omitempty"`

	// History lists earlier failures of the same invocation (oldest first),
	// for entries that are parked after several replays. Optional.
	History []Failure `json:"history,omitempty"`
}

// Failure is one earlier failure of an invocation, kept in Entry.History.
type Failure struct {
	// Class, Reason, FailedAt, ReplayCount, DeliveryCount and Worker are
	// the earlier entry's fields of the same names.
	Class         string    `json:"class"`
	Reason        string    `json:"reason"`           // Reason says what failed.
	FailedAt      time.Time `json:"failed_at"`        // FailedAt is when the failure happened.
	ReplayCount   int       `json:"replay_count"`     // ReplayCount is the replays before that failure.
	DeliveryCount uint64    `json:"delivery_count"`   // DeliveryCount is the delivery count at that failure.
	Worker        string    `json:"worker,omitempty"` // Worker names the worker that dead-lettered it.
}

// SetRequest stores the original request bytes in Request when they are
// valid UTF-8 JSON, else verbatim in RequestRaw, and sets RequestSize.
func (e *Entry) SetRequest(data []byte) {
	e.Request, e.RequestRaw = nil, nil
	e.RequestTruncated, e.RequestSHA256 = false, ""
	e.RequestSize = len(data)
	if len(data) == 0 {
		return
	}
	if utf8.Valid(data) && json.Valid(data) {
		e.Request = bytes.Clone(data)
		return
	}
	e.RequestRaw = bytes.Clone(data)
}

// OriginalRequest returns the stored request bytes: Request if set, else
// RequestRaw (a prefix only when RequestTruncated).
func (e *Entry) OriginalRequest() []byte {
	if len(e.Request) > 0 {
		return e.Request
	}
	return e.RequestRaw
}

// Encode returns the entry's JSON, setting V if it is zero. HTML characters
// are not escaped, so Request keeps its text.
func (e *Entry) Encode() ([]byte, error) {
	if e.V == 0 {
		e.V = Version
	}
	out := e
	if e.ToolsCompleted == nil {
		// tools_completed[] is a list (DESIGN.md): an entry of a run that
		// completed no tool says [], not null, so a script's
		// `.tools_completed[]` works on every entry (found in review,
		// eighteenth session).
		c := *e
		c.ToolsCompleted = []string{}
		out = &c
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
