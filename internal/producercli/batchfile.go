package producercli

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// maxLineSize bounds one line of a batch file.
const maxLineSize = 2 * envelope.DefaultMaxSize

// Line is one request of a batch file.
type Line struct {
	// No is the 1-based line number in the file.
	No int
	// Request is the request to submit (nil when Err is set).
	Request *envelope.Request
	// DerivedID is set when the invocation id was derived from the content.
	DerivedID bool
	// Err says why the line cannot be submitted (an *envelope.InvalidError
	// or a JSON error).
	Err error
}

// batchLine is the JSON of a line: a request envelope, optionally with the
// shortcut "text" for a user message of one text part.
type batchLine struct {
	envelope.Request
	Text string `json:"text,omitempty"`
}

// ParseBatch reads a JSON Lines batch file. Each non-blank line that does
// not start with '#' is a request envelope (v may be omitted; "text" may
// stand for the message). A line without invocation_id gets
// DeriveInvocationID of its content, so running the same file again yields
// the same ids. Lines that are not valid requests are returned with Err set;
// only a read error fails the whole parse.
func ParseBatch(r io.Reader) ([]Line, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxLineSize)
	var out []Line
	no := 0
	for sc.Scan() {
		no++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 || raw[0] == '#' {
			continue
		}
		out = append(out, parseLine(no, raw))
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("batch file, after line %d: %w", no, err)
	}
	return out, nil
}

func parseLine(no int, raw []byte) Line {
	var bl batchLine
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&bl); err != nil {
		return Line{No: no, Err: &envelope.InvalidError{Reason: "not a JSON request object: " + err.Error()}}
	}
	if dec.More() {
		return Line{No: no, Err: &envelope.InvalidError{Reason: "more than one JSON value on the line"}}
	}
	req := bl.Request
	if req.Message == nil && bl.Text != "" {
		req.Message = model.NewTextContent(model.RoleUser, bl.Text)
	}
	if req.V == 0 {
		req.V = envelope.Version
	}
	l := Line{No: no, Request: &req}
	if req.InvocationID == "" {
		id, err := DeriveInvocationID(&req)
		if err != nil {
			return Line{No: no, Err: err}
		}
		req.InvocationID, l.DerivedID = id, true
	}
	if err := req.Validate(); err != nil {
		return Line{No: no, Err: err}
	}
	return l
}

// DeriveInvocationID returns the invocation id of a request that has none:
// "b-" and the first 32 hex digits of the SHA-256 of its canonical JSON (the
// request with an empty invocation id, encoded by encoding/json: fixed field
// order, sorted metadata keys). Equal requests get equal ids, whatever the
// white space or key order of the line, and whether the text was given as
// "text" or as a message.
func DeriveInvocationID(req *envelope.Request) (string, error) {
	c := *req
	c.InvocationID = ""
	if c.V == 0 {
		c.V = envelope.Version
	}
	b, err := json.Marshal(&c)
	if err != nil {
		return "", fmt.Errorf("derive invocation id: %w", err)
	}
	sum := sha256.Sum256(b)
	return "b-" + hex.EncodeToString(sum[:16]), nil
}
