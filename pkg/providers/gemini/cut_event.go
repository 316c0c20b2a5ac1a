package gemini

import (
	"bytes"
	"encoding/json"
)

// A stream whose body breaks off after its finish chunk has delivered its
// whole answer (cutAfterFinish), unless what broke off was an error event:
// the server saying, after the answer, that the call failed. The SDK
// cannot decode a half event, so it reports a JSON error, not the
// genai.APIError a whole error event gives, and the adapter reads the
// half event itself: the body records the start of the event it is in
// (eventHead), which the call's statusRecord keeps when the body breaks
// off, and isErrorEvent tells an error event from the rest (found in
// review, twenty-first session).

// maxEventHead is how much of an event's start eventHead keeps: enough to
// read an error event's first key, whatever the event's size.
const maxEventHead = 4 << 10

// eventHead follows a response body as it is read and keeps the first
// bytes (at most maxEventHead) of the server-sent event being read: the
// bytes after the last blank line (an event boundary: "\n\n", or
// "\r\n\r\n" as the SDK splits events, or "\n\r\n").
type eventHead struct {
	buf         []byte
	prev, prev2 byte // the last two bytes read, for a boundary split across reads
}

// add follows p, the next bytes read from the body.
func (h *eventHead) add(p []byte) {
	// at returns p[k], or for k = -1 and -2 the bytes read before p.
	at := func(k int) byte {
		switch {
		case k >= 0:
			return p[k]
		case k == -1:
			return h.prev
		case k == -2:
			return h.prev2
		}
		return 0
	}
	start := -1 // where the last event starting in p starts
	for i := 0; ; {
		j := bytes.IndexByte(p[i:], '\n')
		if j < 0 {
			break
		}
		k := i + j
		if at(k-1) == '\n' || (at(k-1) == '\r' && at(k-2) == '\n') {
			start = k + 1
		}
		i = k + 1
	}
	h.prev2, h.prev = at(len(p)-2), at(len(p)-1)
	if start >= 0 {
		h.buf = h.buf[:0]
		p = p[start:]
	}
	if room := maxEventHead - len(h.buf); room > 0 {
		h.buf = append(h.buf, p[:min(room, len(p))]...)
	}
}

// snapshot returns a copy of the kept start of the current event.
func (h *eventHead) snapshot() []byte { return bytes.Clone(h.buf) }

// isErrorEvent reports whether event, the start of a server-sent event
// (possibly cut short), is an error event: a JSON object, after an
// optional SSE "data:" field name, with a top-level "error" key before the
// point where it breaks off. A chunk of the answer, or an event cut before
// its first key is whole, is not.
func isErrorEvent(event []byte) bool {
	data := bytes.TrimLeft(event, " \t\r\n")
	if rest, ok := bytes.CutPrefix(data, []byte("data:")); ok {
		data = rest
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if key, _ := tok.(string); key == "error" {
			return true
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return false
		}
	}
	return false
}
