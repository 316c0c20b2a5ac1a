package dlq

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// MaxEntrySize bounds what DecodeEntry accepts: 64 MiB, the largest
// max_payload of a server on the default max_pending (max_payload may not
// exceed max_pending). It guards the decoder against an arbitrary message;
// it is not what the Publisher writes: that is at most MaxStoredEntry
// (EncodeToFit), well below, so every entry the Publisher (or the
// replayer's park) stores decodes, and an entry another writer stored in a
// memory stream up to this size does too.
const MaxEntrySize = 64 << 20

// ErrInvalidEntry is matched (errors.Is) by every *DecodeError.
var ErrInvalidEntry = errors.New("dlq: invalid entry")

// DecodeError reports an entry that cannot be decoded: not JSON, truncated,
// an unknown version or a missing required field. The Reader sets Seq and
// Subject; a listing reports the entry and goes on.
type DecodeError struct {
	// Seq and Subject locate the entry in the stream (0 and "" when
	// DecodeEntry was called directly).
	Seq     uint64
	Subject string // Subject is the entry's stream subject.
	// Reason is short and safe to show.
	Reason string
	// Err is the underlying JSON error, if any.
	Err error
}

// Error implements error.
func (e *DecodeError) Error() string {
	s := "dlq: invalid entry"
	if e.Seq != 0 {
		s += fmt.Sprintf(" at seq %d", e.Seq)
	}
	return s + ": " + e.Reason
}

// Unwrap returns the underlying error and ErrInvalidEntry.
func (e *DecodeError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrInvalidEntry, e.Err}
	}
	return []error{ErrInvalidEntry}
}

// classRE is what a class may look like: it is a subject token.
var classRE = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)

// DecodeEntry decodes and checks an entry. Unknown fields are ignored; a
// class the local taxonomy does not know is accepted when it is well formed
// (upper case, subject-safe), so an older replayer reads a newer worker's
// entries. Every failure is a *DecodeError.
func DecodeEntry(data []byte) (*Entry, error) {
	if len(data) > MaxEntrySize {
		return nil, &DecodeError{Reason: fmt.Sprintf("entry is %d bytes, limit %d", len(data), MaxEntrySize)}
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, &DecodeError{Reason: "empty entry"}
	}
	if trimmed[0] != '{' {
		return nil, &DecodeError{Reason: "not a JSON object"}
	}
	var e Entry
	if err := json.Unmarshal(trimmed, &e); err != nil {
		// Truncated input is a *json.SyntaxError ("unexpected end of JSON
		// input") too.
		reason := "a field has the wrong type"
		var se *json.SyntaxError
		if errors.As(err, &se) {
			reason = "not valid JSON (truncated?)"
		}
		return nil, &DecodeError{Reason: reason, Err: err}
	}
	if err := e.check(); err != nil {
		return nil, err
	}
	return &e, nil
}

// check validates the decoded fields.
func (e *Entry) check() error {
	bad := func(format string, args ...any) error {
		return &DecodeError{Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case e.V != Version:
		return bad("unsupported entry version %d (this reader reads %d)", e.V, Version)
	case !envelope.ValidID(e.InvocationID):
		return bad("invocation_id missing or not [A-Za-z0-9_-]{1,128}")
	case !envelope.ValidID(e.Agent):
		return bad("agent missing or not [A-Za-z0-9_-]{1,128}")
	case !classRE.MatchString(string(e.Class)):
		return bad("class missing or not [A-Z][A-Z0-9_]*")
	case e.FailedAt.IsZero():
		return bad("failed_at missing")
	case e.FirstFailedAt.IsZero():
		return bad("first_failed_at missing")
	case e.FirstFailedAt.After(e.FailedAt):
		return bad("first_failed_at is after failed_at")
	case e.ReplayCount < 0:
		return bad("negative replay_count")
	case e.RequestSize < 0:
		return bad("negative request_size")
	case e.ToolsCompletedOmitted < 0:
		return bad("negative tools_completed_omitted")
	case len(e.Request) > 0 && len(e.RequestRaw) > 0:
		return bad("both request and request_raw set")
	case e.RequestTruncated && e.RequestSHA256 == "":
		return bad("truncated request without request_sha256")
	}
	return nil
}

// asDecodeError is errors.As for *DecodeError.
func asDecodeError(err error, target **DecodeError) bool { return errors.As(err, target) }
