package producercli

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"unicode/utf8"
)

// maxMemberJSON bounds the JSON text of a member's key or value that
// lineSession keeps: an agent, a user or a session id is at most 256
// bytes, each of them 6 bytes when escaped ("\u0041"), within quotes.
const maxMemberJSON = 2 + 6*256

// maxSkimDepth bounds the nesting of the values lineSession skips, as
// encoding/json bounds it.
const maxSkimDepth = 10000

// unknownName is the JSON lineSession decodes in place of a member value
// it did not keep (longer than maxMemberJSON, or not valid UTF-8): a name
// holding its NUL is not known.
const unknownName = `"\u0000"`

// lineNames are the members of a batch line that name its session.
type lineNames struct {
	Agent     string `json:"agent"`
	UserID    string `json:"user_id"`
	SessionID string `json:"session_id"`
}

// lineSession returns the session (agent, user_id and session_id members)
// that the JSON object a batch line starts with names, for an invalid line
// ParseBatch does not decode whole: one longer than maxLineSize, or not
// valid UTF-8. It reads the line from r once and keeps one member's key
// and value at a time, each at most maxMemberJSON bytes, so a line of any
// length is read in bounded memory. The names are what encoding/json
// would decode (each member is decoded by it, in order: a member named in
// other case counts, the last of a member given twice wins, a value of
// another type is ignored), and text after the object is ignored, as
// parseLine does for a line it decodes. The zero key is returned when the
// line does not start with a JSON object, when it does not name all
// three, and when a name is not valid UTF-8 or too long to keep: the
// file's name is not known then, and a guess could hold another session.
func lineSession(r io.ByteScanner) sessionKey {
	s := &skim{r: r}
	var names lineNames
	if s.peek() != '{' {
		return sessionKey{}
	}
	s.next()
	if s.peek() == '}' {
		return sessionKey{} // names nothing
	}
	for {
		s.keep, s.over = s.keep[:0], false
		if s.peek() != '"' {
			return sessionKey{}
		}
		s.next()
		s.str()
		key, keyOver := bytes.Clone(s.keep), s.over
		if s.peek() != ':' {
			return sessionKey{}
		}
		s.next()
		s.keep, s.over = s.keep[:0], false
		s.value(1)
		if s.bad {
			return sessionKey{}
		}
		// A key longer than maxMemberJSON names none of the three.
		if !keyOver {
			val := s.keep
			if s.over || !utf8.Valid(val) {
				val = []byte(unknownName)
			}
			member := make([]byte, 0, len(key)+len(val)+3)
			member = append(append(append(append(append(member, '{'), key...), ':'), val...), '}')
			var te *json.UnmarshalTypeError
			if err := json.Unmarshal(member, &names); err != nil && !errors.As(err, &te) {
				return sessionKey{}
			}
		}
		switch s.peek() {
		case ',':
			s.next()
		case '}':
			if names.Agent == "" || names.UserID == "" || names.SessionID == "" ||
				strings.ContainsRune(names.Agent+names.UserID+names.SessionID, 0) {
				return sessionKey{}
			}
			return sessionKey{agent: names.Agent, user: names.UserID, session: names.SessionID}
		default:
			return sessionKey{}
		}
	}
}

// skim reads JSON values from r without holding them, keeping the bytes
// read since keep was last reset (up to maxMemberJSON; over is set past
// that). bad is set at the first byte that is not JSON, or at the end of
// the input: the byte read then is 0, which JSON has nowhere.
type skim struct {
	r    io.ByteScanner
	keep []byte
	over bool
	bad  bool
}

// next reads a byte and keeps it.
func (s *skim) next() byte {
	b, err := s.r.ReadByte()
	if err != nil {
		s.bad = true
		return 0
	}
	if len(s.keep) < maxMemberJSON {
		s.keep = append(s.keep, b)
	} else {
		s.over = true
	}
	return b
}

// peek skips white space and returns the next byte, not read.
func (s *skim) peek() byte {
	for {
		b, err := s.r.ReadByte()
		if err != nil {
			s.bad = true
			return 0
		}
		switch b {
		case ' ', '\t', '\n', '\r':
			continue
		}
		_ = s.r.UnreadByte()
		return b
	}
}

// peekRaw returns the next byte, not read (0 at the end).
func (s *skim) peekRaw() byte {
	b, err := s.r.ReadByte()
	if err != nil {
		return 0
	}
	_ = s.r.UnreadByte()
	return b
}

// value reads a JSON value.
func (s *skim) value(depth int) {
	if depth > maxSkimDepth {
		s.bad = true
		return
	}
	switch b := s.peek(); {
	case b == '"':
		s.next()
		s.str()
	case b == '{':
		s.next()
		s.compound('}', depth)
	case b == '[':
		s.next()
		s.compound(']', depth)
	case b == 't':
		s.literal("true")
	case b == 'f':
		s.literal("false")
	case b == 'n':
		s.literal("null")
	case b == '-' || isDigit(b):
		s.number()
	default:
		s.bad = true
	}
}

// str reads the rest of a string, after its opening quote.
func (s *skim) str() {
	for !s.bad {
		switch b := s.next(); {
		case b == '"':
			return
		case b < 0x20:
			s.bad = true
		case b == '\\':
			switch s.next() {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				for range 4 {
					if b := s.next(); !isDigit(b) && (b|0x20 < 'a' || b|0x20 > 'f') {
						s.bad = true
					}
				}
			default:
				s.bad = true
			}
		}
	}
}

// compound reads the rest of an object (end '}') or an array (end ']'),
// after its opening brace or bracket.
func (s *skim) compound(end byte, depth int) {
	if s.peek() == end {
		s.next()
		return
	}
	for !s.bad {
		if end == '}' {
			if s.peek() != '"' {
				s.bad = true
				return
			}
			s.next()
			s.str()
			if s.peek() != ':' {
				s.bad = true
				return
			}
			s.next()
		}
		s.value(depth + 1)
		switch s.peek() {
		case ',':
			s.next()
		case end:
			s.next()
			return
		default:
			s.bad = true
		}
	}
}

// literal reads true, false or null.
func (s *skim) literal(word string) {
	for i := range len(word) {
		if s.next() != word[i] {
			s.bad = true
			return
		}
	}
}

// number reads a number.
func (s *skim) number() {
	if s.peekRaw() == '-' {
		s.next()
	}
	switch b := s.next(); {
	case b == '0':
	case isDigit(b):
		s.digits()
	default:
		s.bad = true
		return
	}
	if s.peekRaw() == '.' {
		s.next()
		s.digits1()
	}
	if e := s.peekRaw(); e == 'e' || e == 'E' {
		s.next()
		if sign := s.peekRaw(); sign == '+' || sign == '-' {
			s.next()
		}
		s.digits1()
	}
}

// digits reads digits.
func (s *skim) digits() {
	for isDigit(s.peekRaw()) {
		s.next()
	}
}

// digits1 reads one digit or more.
func (s *skim) digits1() {
	if !isDigit(s.next()) {
		s.bad = true
		return
	}
	s.digits()
}

func isDigit(b byte) bool { return '0' <= b && b <= '9' }
