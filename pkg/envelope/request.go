package envelope

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

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
// DefaultMaxSize. Every failure is an *InvalidError. Field names are read
// as the contract writes them: an unknown member is ignored, but one that
// names a field in other case ("User_ID", or "Text" in the message), a
// field given twice (or a member, in the message or the metadata) and an
// escaped lone surrogate are refused (see CheckJSON), and a member of the
// wrong type is refused with a reason naming it.
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
	err := json.Unmarshal(data, &r)
	var te *json.UnmarshalTypeError
	if err != nil && !errors.As(err, &te) {
		return nil, invalid("not a JSON request object")
	}
	// The JSON is well-formed: its member names and strings can be
	// checked before a type error is reported, which encoding/json names
	// by the field it matched (user_id for "User_ID").
	if err := CheckJSON(data); err != nil {
		return nil, err
	}
	if te != nil {
		return nil, TypeError(te)
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &r, nil
}

// requestFields are the JSON names of Request's fields, as CheckJSON
// compares member names with them.
var requestFields = [...]string{"v", "invocation_id", "agent", "user_id", "session_id", "message", "metadata"}

// CheckJSON checks what encoding/json lets through in a request's JSON
// (data, which encoding/json has parsed without a syntax error; on other
// input the result says little, but it never panics). Its fields are
// Request's and extraFields (the JSON names of a wrapper's own fields).
// It refuses, with an *InvalidError:
//   - a member whose name equals a field's only when case is ignored
//     ("User_ID"), in the top-level object or in any object of the
//     message ("Text" in a part): encoding/json matches names regardless
//     of case, so the worker would read it as the field while a
//     case-sensitive reader (the contract, Python, jq, a gateway checking
//     the user or the text) ignores it as unknown; other unknown members
//     are ignored, and the keys of a map (metadata, a function call's
//     args) are read as they are;
//   - a field of the top-level object given twice, or a member given twice
//     in any object of the message or the metadata: readers differ on
//     which one counts (encoding/json takes the last); a repeated unknown
//     top-level member is ignored, as unknown members are;
//   - an escaped lone surrogate ("\ud800" not followed by its low half, or
//     a low half alone) in any string: encoding/json reads each as U+FFFD,
//     so distinct ids or texts would become one.
//
// It makes one pass over data and allocates only for escaped member names,
// objects of more than smallObject members and deep nesting; only when a
// member name in the message is not lower-case snake_case (as all of
// model.Content's field names are) does it decode the message again to
// compare its names with the fields.
func CheckJSON(data []byte, extraFields ...string) error {
	const (
		message  = 5 // requestFields index of "message"
		metadata = 6 // and of "metadata"
	)
	var seen uint64 // bit i: field i was given (Request's fields, then extraFields)
	var stackBuf [16]container
	stack := stackBuf[:0] // the containers open at data[i], innermost last
	var namesBuf [32][]byte
	names := namesBuf[:0] // the member names of the open objects in message and metadata
	member := -1          // the field of the top-level member being read, or -1
	wantName := false
	foldable := false          // a name in the message may fold to a field's
	msgStart, msgEnd := -1, -1 // the message object's bytes
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '{':
			if len(stack) == 1 && member == message && msgStart < 0 {
				msgStart = i
			}
			stack = append(stack, container{object: true, names: len(names)})
			wantName = true
		case '[':
			stack = append(stack, container{names: len(names)})
			wantName = false
		case '}', ']':
			if len(stack) == 0 {
				return nil // not JSON: left to the decoder
			}
			names = names[:stack[len(stack)-1].names]
			stack = stack[:len(stack)-1]
			if len(stack) == 1 && member == message && msgStart >= 0 && msgEnd < 0 {
				msgEnd = i + 1
			}
			wantName = false
		case ',':
			wantName = len(stack) > 0 && stack[len(stack)-1].object
		case '"':
			end, escaped, err := scanString(data, i+1)
			if err != nil {
				return err
			}
			if end == len(data) {
				return nil // not JSON: left to the decoder
			}
			if wantName {
				wantName = false
				raw := data[i+1 : end]
				name := raw
				if escaped {
					var s string
					if json.Unmarshal(data[i:end+1], &s) != nil {
						return nil // not JSON: left to the decoder
					}
					name = []byte(s)
				}
				switch {
				case len(stack) == 1:
					f, err := fieldIndex(name, extraFields)
					if err != nil {
						return err
					}
					member = f
					if f >= 0 && f < 64 {
						if seen&(1<<f) != 0 {
							return invalid("duplicate field %s", name)
						}
						seen |= 1 << f
					}
				case member == message || member == metadata:
					if member == message && !foldable {
						foldable = !snakeCase(raw)
					}
					top := &stack[len(stack)-1]
					if top.set != nil {
						if _, dup := top.set[string(name)]; dup {
							return invalid("duplicate member %s in %s", shown(string(name)), requestFields[member])
						}
						top.set[aliasString(name)] = struct{}{}
						break
					}
					for _, n := range names[top.names:] {
						if bytes.Equal(n, name) {
							return invalid("duplicate member %s in %s", shown(string(name)), requestFields[member])
						}
					}
					names = append(names, name)
					if len(names)-top.names > smallObject {
						top.set = make(map[string]struct{}, 2*smallObject)
						for _, n := range names[top.names:] {
							top.set[aliasString(n)] = struct{}{}
						}
						names = names[:top.names]
					}
				}
			}
			i = end
		}
	}
	if foldable && msgStart >= 0 && msgEnd > msgStart {
		var v any
		if json.Unmarshal(data[msgStart:msgEnd], &v) != nil {
			return nil // not JSON: left to the decoder
		}
		return checkFieldCase(v, reflect.TypeFor[model.Content]())
	}
	return nil
}

// smallObject is how many member names of an object CheckJSON compares one
// by one before it keeps them in a map.
const smallObject = 16

// A container is an object or array CheckJSON is in.
type container struct {
	object bool                // an object, not an array
	names  int                 // the index of its first member name in CheckJSON's names
	set    map[string]struct{} // its member names, once it has more than smallObject
}

// snakeCase reports whether a raw member name is of a-z, 0-9 and '_' only:
// no such name folds to another ASCII name, and a non-ASCII rune that
// folds to an ASCII letter (U+017F ſ, U+212A Kelvin) is none of these.
func snakeCase(raw []byte) bool {
	for _, c := range raw {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// checkFieldCase walks v, a JSON value decoded into any, as encoding/json
// would decode it into a t, and returns an *InvalidError for a member
// whose name equals a struct field's only when case is ignored. The keys
// of a map, and anything decoded into an interface, are read as they are.
func checkFieldCase(v any, t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		fields := cachedFields(t)
		// The smallest offending name, so the reason is the same each
		// time; no allocation per object (found in review of this
		// session's fix, twenty-second session: one upper-case name made
		// every object of the message cost two slices).
		bad, badField := "", ""
		for k := range obj {
			if fieldOf(fields, k) != nil {
				continue
			}
			for _, f := range fields {
				if strings.EqualFold(f.name, k) {
					if bad == "" || k < bad {
						bad, badField = k, f.name
					}
					break
				}
			}
		}
		if bad != "" {
			return invalid("member %s is not the field %s (field names are case-sensitive)", shown(bad), badField)
		}
		for i := range fields {
			if ev, ok := obj[fields[i].name]; ok {
				if err := checkFieldCase(ev, fields[i].typ); err != nil {
					return err
				}
			}
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok || t.Elem().Kind() == reflect.Interface {
			return nil // read as it is
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys) // the same reason each time
		for _, k := range keys {
			if err := checkFieldCase(obj[k], t.Elem()); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		arr, ok := v.([]any)
		if !ok || t.Elem().Kind() == reflect.Uint8 {
			return nil // []byte is a base64 string
		}
		for _, e := range arr {
			if err := checkFieldCase(e, t.Elem()); err != nil {
				return err
			}
		}
	}
	return nil
}

// fieldOf returns the field of fields named name, or nil.
func fieldOf(fields []jsonField, name string) *jsonField {
	for i := range fields {
		if fields[i].name == name {
			return &fields[i]
		}
	}
	return nil
}

// fieldCache holds jsonFields of each struct type checkFieldCase met.
var fieldCache sync.Map // reflect.Type → []jsonField

// cachedFields is jsonFields(t, nil), computed once per type.
func cachedFields(t reflect.Type) []jsonField {
	if f, ok := fieldCache.Load(t); ok {
		return f.([]jsonField)
	}
	f, _ := fieldCache.LoadOrStore(t, jsonFields(t, nil))
	return f.([]jsonField)
}

// aliasString is b as a string without a copy. CheckJSON uses it for the
// keys of a member-name set that lives only during the call, over bytes
// nothing writes to meanwhile (the request, or a name it unescaped): a
// copy per member made an object of many members cost an allocation each
// (found in review of this session's fix, twenty-second session).
func aliasString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// A jsonField is a struct field as encoding/json names it.
type jsonField struct {
	name string       // name is its JSON name.
	typ  reflect.Type // typ is its type.
}

// jsonFields appends to fields the fields of struct t that encoding/json
// reads, by their JSON names, those of embedded structs included.
func jsonFields(t reflect.Type, fields []jsonField) []jsonField {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" && f.Anonymous {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				fields = jsonFields(et, fields)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields = append(fields, jsonField{name, f.Type})
	}
	return fields
}

// fieldIndex returns the index of the field named name (Request's fields,
// then extra), or -1 for an unknown name; a name that equals a field's
// only when case is ignored is an *InvalidError.
func fieldIndex(name []byte, extra []string) (int, error) {
	for f, fn := range requestFields {
		if string(name) == fn {
			return f, nil
		}
	}
	for f, fn := range extra {
		if string(name) == fn {
			return len(requestFields) + f, nil
		}
	}
	for _, fields := range [][]string{requestFields[:], extra} {
		for _, fn := range fields {
			// A rune folding to an ASCII letter has at most three bytes
			// (the Kelvin sign), so a longer name folds to no field.
			if len(name) <= 3*len(fn) && strings.EqualFold(string(name), fn) {
				return -1, invalid("member %s is not the field %s (field names are case-sensitive)", shown(string(name)), fn)
			}
		}
	}
	return -1, nil
}

// scanString scans a JSON string's contents from data[i] (just after its
// opening quote) and returns the index of its closing quote (len(data) if
// there is none) and whether it holds an escape. A lone surrogate escape
// is an *InvalidError.
func scanString(data []byte, i int) (end int, escaped bool, err error) {
	for ; i < len(data); i++ {
		switch data[i] {
		case '"':
			return i, escaped, nil
		case '\\':
			escaped = true
			if i+1 < len(data) && data[i+1] == 'u' {
				switch r := hex4(data, i+2); {
				case 0xD800 <= r && r < 0xDC00:
					if i+11 < len(data) && data[i+6] == '\\' && data[i+7] == 'u' {
						if lo := hex4(data, i+8); 0xDC00 <= lo && lo < 0xE000 {
							i += 11 // the pair
							continue
						}
					}
					return 0, false, invalid("a string holds %s, half of a UTF-16 surrogate pair without the other half (not a character)", data[i:i+6])
				case 0xDC00 <= r && r < 0xE000:
					return 0, false, invalid("a string holds %s, half of a UTF-16 surrogate pair without the other half (not a character)", data[i:i+6])
				case r >= 0:
					i += 5
					continue
				}
			}
			i++ // the escaped byte
		}
	}
	return len(data), escaped, nil
}

// hex4 returns the value of the four hex digits at data[i:], or -1.
func hex4(data []byte, i int) int {
	if i+4 > len(data) {
		return -1
	}
	v := 0
	for _, c := range data[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		v = v<<4 | int(c)
	}
	return v
}

// shown returns s for a reason: as is when it is a short name of letters,
// digits, '_', '-' and '.', else quoted and cut to 64 bytes.
func shown(s string) string {
	plain := len(s) > 0 && len(s) <= 64
	for i := 0; plain && i < len(s); i++ {
		c := s[i]
		plain = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.'
	}
	if plain {
		return s
	}
	if len(s) > 64 {
		n := 64
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		return strconv.Quote(s[:n]) + "…"
	}
	return strconv.Quote(s)
}

// TypeError returns the *InvalidError for a member of the wrong type: its
// reason names the field ("field user_id: want a string, got number").
func TypeError(te *json.UnmarshalTypeError) error {
	if te.Field == "" {
		return invalid("not a JSON request object (got %s)", cut(te.Value))
	}
	return invalid("field %s: want %s, got %s", shown(te.Field), jsonType(te.Type), cut(te.Value))
}

// cut shortens an UnmarshalTypeError's Value ("number 1.0": the literal of
// a number may be long).
func cut(s string) string {
	if len(s) > 40 {
		return s[:40] + "…" // a number's literal: ASCII
	}
	return s
}

// jsonType names the JSON value a Go type is decoded from.
func jsonType(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "another value"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a string (base64)" // encoding/json's []byte
		}
		return "an array"
	case reflect.Array:
		return "an array"
	}
	return "another value"
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
