package producercli

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// maxLineSize bounds one line of a batch file.
const maxLineSize = 2 * envelope.DefaultMaxSize

// utf8BOM is the byte order mark some editors write at the start of a
// UTF-8 file ("UTF-8 with BOM").
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

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
	// session is, on an invalid line whose JSON names an agent, a user
	// and a session, that session: RunBatch holds its later lines (zero
	// otherwise). A line too long to read whole or not valid UTF-8 names
	// them too (lineSession), unless a name itself is not UTF-8.
	session sessionKey
}

// batchLine is the JSON of a line: a request envelope, optionally with the
// shortcut "text" for a user message of one text part (instead of
// "message", not with it).
type batchLine struct {
	envelope.Request
	Text string `json:"text,omitempty"`
}

// ParseBatch reads a JSON Lines batch file. Each non-blank line that does
// not start with '#' is a request envelope (v may be omitted; "text" may
// stand for the message, and a line giving both is refused). A line
// without invocation_id gets DeriveInvocationID of its content, so running
// the same file again yields the same ids. Lines that are not valid requests, including a line longer
// than maxLineSize and a request larger than a request envelope may be
// (envelope.DefaultMaxSize), are returned with Err set and the rest of the
// file is still read (such a line whose JSON names its agent, user and
// session still holds the session's later lines in RunBatch: also a line
// longer than maxLineSize, whose names are read as it is skipped, and a
// line that is not valid UTF-8 unless the bad bytes are in a name); only a
// read error fails the whole parse. A UTF-8 byte
// order mark at the start of the file is dropped: line 1 is the request it
// would be without it (same derived id), and a '#' after it starts a
// comment.
func ParseBatch(r io.Reader) ([]Line, error) {
	br := bufio.NewReaderSize(r, 64*1024)
	var out []Line
	no := 0
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) > maxLineSize {
			// Refused unread, but the session it names is read while the
			// rest of it is skipped, one member at a time (lineSession),
			// so that it holds its session's later lines as a shorter
			// invalid line does (found in review of this session's fix,
			// twenty-fifth session: a pasted log of more than maxLineSize
			// held nothing, and a rerun ran the session's turns 1, 3, 2).
			no++
			head := buf
			if no == 1 {
				head = bytes.TrimPrefix(head, utf8BOM)
			}
			rest := &lineRest{br: br, err: err}
			out = append(out, Line{No: no, Err: &envelope.InvalidError{Reason: fmt.Sprintf("the line is longer than %d bytes", maxLineSize)},
				session: lineSession(bufio.NewReader(io.MultiReader(bytes.NewReader(head), bytes.NewReader(chunk), rest)))})
			_, _ = io.Copy(io.Discard, rest) // lineRest.Read fails only with io.EOF
			err, buf = rest.err, buf[:0]
		} else {
			buf = append(buf, chunk...)
			if errors.Is(err, bufio.ErrBufferFull) {
				continue // the line goes on
			}
			if len(buf) > 0 {
				no++
				raw := buf
				if no == 1 {
					// Written by Windows tools saving "UTF-8 with BOM": not
					// part of the request, and invisible in the editor.
					raw = bytes.TrimPrefix(raw, utf8BOM)
				}
				raw = bytes.TrimSpace(raw)
				if len(raw) > 0 && raw[0] != '#' {
					out = append(out, parseLine(no, raw))
				}
				buf = buf[:0]
			}
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("batch file, after line %d: %w", no, err)
		}
	}
}

// lineRest reads the rest of a line from br, to its newline (included).
type lineRest struct {
	br  *bufio.Reader
	p   []byte // read from br, not returned yet
	err error  // the last ReadSlice's: bufio.ErrBufferFull while the line goes on
}

// Read implements io.Reader.
func (r *lineRest) Read(p []byte) (int, error) {
	for len(r.p) == 0 {
		if !errors.Is(r.err, bufio.ErrBufferFull) {
			return 0, io.EOF
		}
		r.p, r.err = r.br.ReadSlice('\n')
	}
	n := copy(p, r.p)
	r.p = r.p[n:]
	return n, nil
}

func parseLine(no int, raw []byte) Line {
	if !utf8.Valid(raw) {
		// encoding/json would read each bad byte as U+FFFD: another text
		// (and user) than the file's, and two lines that differ only
		// there would get one derived id. The worker refuses such
		// requests too (envelope.DecodeRequest).
		// Its session is still read (lineSession, which leaves a name
		// with a bad byte unknown): it holds the session's later lines
		// (found in review of this session's fix, twenty-fifth session:
		// a turn saved as Windows-1252 held nothing).
		return Line{No: no, Err: &envelope.InvalidError{Reason: "the line is not valid UTF-8 (save the file as UTF-8)"},
			session: lineSession(bytes.NewReader(raw))}
	}
	var bl batchLine
	dec := json.NewDecoder(bytes.NewReader(raw))
	err := dec.Decode(&bl)
	var te *json.UnmarshalTypeError
	if err != nil && !errors.As(err, &te) {
		return Line{No: no, Err: &envelope.InvalidError{Reason: "not a JSON request object: " + err.Error()}}
	}
	// From here on the line's JSON decoded: an invalid line names its
	// session, whose later lines it holds (RunBatch), so that a rerun
	// sends them after the fixed line (found in review, twenty-fifth
	// session: they were sent at once, and the model saw turns 1, 3, 2).
	invalid := func(err error) Line {
		l := Line{No: no, Err: err}
		if bl.Agent != "" && bl.UserID != "" && bl.SessionID != "" {
			l.session = sessionKey{agent: bl.Agent, user: bl.UserID, session: bl.SessionID}
		}
		return l
	}
	// Only white space may follow the object (Decoder.More is false before
	// a stray "}" or "]", as in a JSON array pasted one element per line).
	if rest := bytes.TrimSpace(raw[dec.InputOffset():]); len(rest) > 0 {
		return invalid(&envelope.InvalidError{Reason: "more than one JSON value on the line, or text after the request"})
	}
	// What the worker refuses (envelope.DecodeRequest) is refused here
	// too: a member naming a field in other case ("User_ID", which
	// encoding/json reads as user_id), a member given twice, and an
	// escaped lone surrogate ("\ud83d", read as U+FFFD: two lines that
	// differ only there would get one derived id).
	if err := envelope.CheckJSON(raw, "text"); err != nil {
		return invalid(err)
	}
	if te != nil {
		// "field user_id: want a string, got number", as the worker
		// says it (encoding/json names the embedded struct too).
		te.Field = strings.TrimPrefix(te.Field, "Request.")
		return invalid(envelope.TypeError(te))
	}
	req := bl.Request
	if bl.Text != "" {
		if req.Message != nil {
			// Sending one would drop the other without a word.
			return invalid(&envelope.InvalidError{Reason: "give either text or message, not both"})
		}
		req.Message = model.NewTextContent(model.RoleUser, bl.Text)
	}
	if req.V == 0 {
		req.V = envelope.Version
	}
	l := Line{No: no, Request: &req}
	if req.InvocationID == "" {
		id, err := DeriveInvocationID(&req)
		if err != nil {
			return invalid(err)
		}
		req.InvocationID, l.DerivedID = id, true
	}
	if err := req.Validate(); err != nil {
		return invalid(err)
	}
	if b, err := req.Encode(); err != nil {
		return invalid(err)
	} else if len(b) > envelope.DefaultMaxSize {
		return invalid(&envelope.InvalidError{Reason: fmt.Sprintf("the request is %d bytes, more than a request may be (%d)", len(b), envelope.DefaultMaxSize)})
	}
	return l
}

// DeriveInvocationID returns the invocation id of a request that has none:
// "b-" and the first 32 hex digits of the SHA-256 of its canonical JSON (the
// request with an empty invocation id, encoded by encoding/json: fixed field
// order, sorted metadata keys). Equal requests get equal ids, whatever the
// white space or key order of the line, and whether the text was given as
// "text" or as a message with role "user". A message without a role is
// hashed as written, so its id differs from those: ids never change from
// one version to the next, or a batch file run again after an upgrade
// would run every such line a second time.
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
