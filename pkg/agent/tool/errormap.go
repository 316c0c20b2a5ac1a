package tool

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Status values used in result maps.
const (
	StatusOK       = "ok"
	StatusError    = "error"
	StatusNotFound = "not_found"
)

// Reasons used by the ready-made error maps.
const (
	ReasonTimeout      = "timeout"
	ReasonBadArguments = "bad_arguments"
	ReasonUnknownTool  = "unknown_tool"
	ReasonInternal     = "internal_error"
	// ReasonOutcomeUnknown: the tool failed after it may have acted (the
	// idempotency wrapper's stored answer for such a call); the model must
	// not call it again and the user must not be told nothing happened.
	ReasonOutcomeUnknown = "outcome_unknown"
)

// KeyMayHaveActed is set (true) in an error map of a tool with effects
// whose request may have gone out without an answer coming back (a timeout,
// a lost reply): a message to the user must not say it did not happen
// (agent.CompletedTool.OutcomeUnknown reads it, whatever the reason).
const KeyMayHaveActed = "may_have_acted"

// MaxErrorStringLen caps every string in an error map (in runes).
const MaxErrorStringLen = 200

// OK returns {"status": "ok", ...fields}.
func OK(fields map[string]any) map[string]any {
	out := map[string]any{"status": StatusOK}
	for k, v := range fields {
		if k != "status" {
			out[k] = v
		}
	}
	return out
}

// Error returns the small, stable error map the seed recommends:
// {"status": "error", "reason": reason, "retryable": retryable}, plus "hint"
// when hint is not empty. reason should be a machine-readable snake_case
// word; hint a short sentence for the model.
func Error(reason string, retryable bool, hint string) map[string]any {
	m := map[string]any{"status": StatusError, "reason": reason, "retryable": retryable}
	if hint != "" {
		m["hint"] = hint
	}
	return m
}

// NotFound returns {"status": "not_found", "hint": hint}.
func NotFound(hint string) map[string]any {
	m := map[string]any{"status": StatusNotFound}
	if hint != "" {
		m["hint"] = hint
	}
	return m
}

// IsErrorMap reports whether m reports a failure: a "status" other than
// the string "ok" (a number such as 503 or null included), or a "reason"
// without a status.
func IsErrorMap(m map[string]any) bool {
	if m == nil {
		return false
	}
	if st, present := m["status"]; present {
		s, ok := st.(string)
		return !ok || s != StatusOK
	}
	_, hasReason := m["reason"]
	return hasReason
}

// IsRetryable reports whether an error map says a retry could help.
func IsRetryable(m map[string]any) bool {
	r, _ := m["retryable"].(bool)
	return IsErrorMap(m) && r
}

var (
	stackFrameRE = regexp.MustCompile(`(goroutine \d+ \[|\.go:\d+|panic:|\bat [\w$.]+\([\w.]+\.java:\d+\)|Traceback \(most recent call last\))`)
	sqlRE        = regexp.MustCompile(`(?i)\b(select\s.+\sfrom|insert\s+into|update\s+\S+\s+set|delete\s+from|drop\s+table|pq:|sqlstate|ora-\d{5})`)
	urlRE        = regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://\S+`)
	hostPortRE   = regexp.MustCompile(`(?i)\b(?:\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-f:]+\]|[a-z0-9_-]+(?:\.[a-z0-9_-]+)+|localhost)(?::\d{2,5})\b`)
	ipRE         = regexp.MustCompile(`\b\d{1,3}(?:\.\d{1,3}){3}\b`)
	// netHostPortRE: a host:port after a network word, the word "host",
	// an arrow or an at sign (Go's "dial tcp orders-db:5432",
	// "->redis-primary:6379", "user@db:5432", a MySQL DSN's
	// "tcp(orders-db:3306)", aiohttp's "Cannot connect to host
	// vllm-backend:8000" that an LLM proxy passes on, a "Host:" header),
	// where a single-label name (a Kubernetes or compose
	// service) is a host too, underscores included (compose names its
	// containers "myapp_redis_1"); hostPortRE needs a dot to tell a host from
	// "code:500". "host" was added in review of this session's fix
	// (twenty-third session).
	netHostPortRE = regexp.MustCompile(`(?i)(\b(?:(?:tcp|udp)[46]?(?:\s+|\()|host:?\s+)|->|@)[a-z0-9][a-z0-9_-]*:\d{1,5}\b`)
	// lookupRE: the name in Go's DNS error ("lookup orders-db on
	// 10.0.0.2:53: no such host", "lookup orders-db: ..."), only in that
	// shape: "order lookup failed" is plain text.
	lookupRE     = regexp.MustCompile(`(?i)\b(lookup\s+)[a-z0-9][a-z0-9._-]*(\s+on\s+\S+:|:)`)
	internalHost = regexp.MustCompile(`(?i)\b[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.(?:internal|local|lan|corp|svc|cluster\.local)\b`)
	// ipv6RE: an IPv6 address in brackets, with a zone and a port if any
	// (Go's "dial tcp [::1]:6379"), or bare: with "::" and a hex group
	// beside it ("fd00:10:96::7", "::1"), or all eight groups. Times
	// ("10:23:45") and C++ or Rust paths ("std::string") are neither.
	ipv6RE = regexp.MustCompile(`(?i)\[[0-9a-f.]*:[0-9a-f:.]*(?:%[\w.-]+)?\](?::\d{1,5})?|\b(?:[0-9a-f]{1,4}:){1,7}:(?:[0-9a-f]{1,4}(?::[0-9a-f]{1,4}){0,6}\b)?|::[0-9a-f]{1,4}(?::[0-9a-f]{1,4}){0,6}\b|\b(?:[0-9a-f]{1,4}:){7}[0-9a-f]{1,4}\b`)
	// userinfoRE: credentials before a host outside a URL
	// ("admin:hunter2@tcp(orders-db:3306)", a MySQL DSN).
	userinfoRE = regexp.MustCompile(`[^\s/@:()\[\]]+:[^\s/@]+@`)
	// dsnFieldRE: a key=value DSN's secrets and host (libpq and pgx
	// "host=orders-db user=admin password=hunter2").
	dsnFieldRE = regexp.MustCompile(`(?i)\b(password|passwd|pwd|host|hostaddr|user|sslkey|sslpassword)=(?:'[^']*'|\S+)`)
	// authValueRE: an HTTP credential in an error text: an Authorization
	// or X-Api-Key header's value, or a bearer token on its own.
	// Gemini's x-goog-api-key is an API key header too (found in review,
	// eighteenth session).
	authValueRE = regexp.MustCompile(`(?i)(\b(?:proxy-)?authorization\s*[:=]\s*(?:(?:bearer|basic|token|digest)\s+)?|\bx-(?:goog-)?api-key\s*[:=]\s*|\bbearer\s+)[^\s"',;]+`)
	// secretFieldRE: a key=value pair named for a secret ("api_key=…",
	// "token=…", "client_secret=…", a signed URL's "signature=…").
	// A name may carry a prefix ("stripe_api_key", "db_password",
	// "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY": "_" is a word character, so
	// \b alone would not see the name).
	secretFieldRE = regexp.MustCompile(`(?i)\b((?:[\w-]*[_-])?` + secretNames + `\s*=\s*)(?:'[^']*'|"[^"]*"|[^\s&,;'"]+)`)
	// secretJSONRE: the same names as a quoted JSON key ("api_key":
	// "…"), as an error quoting the body it failed on shows them.
	secretJSONRE = regexp.MustCompile(`(?i)("(?:[\w-]*[_-])?` + secretNames + `"\s*:\s*)(?:"(?:[^"\\]|\\.)*"|'[^']*'|[^\s,}\][{'"][^\s,}\]]*)`)
	// secretColonRE: "name: …" for a secret's name, its value quoted or
	// one bare word (${2}): a YAML or log line ("api_key: sk-…",
	// "client_secret: …"), and Go's %v of a map ("map[api_key:sk-…]") or
	// %+v of a struct ("{APIKey:sk-…}", "{DBPassword:…}": the name may
	// carry any prefix, camel case included). redactSecretColon keeps a
	// bare word that starts a sentence ("password: must be at least 8
	// characters", "invalid token: expired"). It was "password:" only until
	// the eighteenth session's review found api keys and client secrets in
	// these shapes reaching the model.
	secretColonRE = regexp.MustCompile(`(?i)(\b[\w-]*` + secretNames + `\s*:\s*)('[^']*'|"(?:[^"\\]|\\.)*"|\[[^\]]*\]|[^\s"',;]+)`)
	// bareKeyRE: a credential with a well-known prefix standing on its
	// own, with no name, header or key=value shape before it ("Invalid API
	// key: sk_live_…", a key quoted in prose): Stripe's sk_/pk_/rk_,
	// OpenAI's and Anthropic's sk-, GitHub's gh?_ and github_pat_, Google's
	// AIza, AWS's AKIA/ASIA key ids, Slack's xox?-, a JWT. The prefixes are
	// case-sensitive and the body long; redactBareKeys also wants a digit
	// in it, so "sk-learn-compatible-estimators" stays text (found in
	// review, twentieth session).
	bareKeyRE = regexp.MustCompile(`\b(?:(?:sk|pk|rk)[-_][A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|AIza[0-9A-Za-z_-]{30,}|A(?:KIA|SIA)[0-9A-Z]{16}\b|xox[abposr]-[A-Za-z0-9-]{10,}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)`)
	// pathRE: a file path, Unix (two components or more, after a space,
	// a quote, a bracket or the start), Windows with a drive letter, or
	// UNC ("dial unix /var/run/redis/redis.sock", "open C:\data\x.db").
	pathRE = regexp.MustCompile(`(?i)(^|[\s"'(=\x60])/[\w.@+-]+(?:/[\w.@+-]*)+|\b[a-z]:\\[^\s"'\x60]*|\\\\[^\s"'\x60]+`)
)

const redacted = "[redacted]"

// secretNames are the names of secrets in key=value pairs and JSON keys
// (secretFieldRE, secretJSONRE) and before a colon (secretColonRE).
const secretNames = `(?:api[_-]?key|access[_-]?key|secret[_-]?key|private[_-]?key|(?:access|refresh|id|auth|session)[_-]?token|token|client[_-]?secret|secret|signature|password|passwd|pwd)`

// secretNameWords: every match of secretNames contains one of them,
// ignoring ASCII case (the pre-check of secretColonRE).
var secretNameWords = []string{"key", "token", "secret", "signature", "passw", "pwd"}

// mayBeStack reports whether s holds a substring that every match of
// stackFrameRE (case-sensitive) contains.
func mayBeStack(s string) bool {
	for _, w := range []string{"goroutine ", ".go:", "panic:", ".java:", "Traceback ("} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// sqlWords: every match of sqlRE contains one of them, ignoring ASCII case.
var sqlWords = []string{"select", "insert", "update", "delete", "drop", "pq:", "sqlstate", "ora-"}

// mayBeSQL reports whether s may match sqlRE.
func mayBeSQL(s string) bool { return mayContainFold(s, sqlWords...) }

// mayContainFold reports whether s may hold one of words (lower-case ASCII)
// as a case-insensitive pattern sees it. (?i) also folds some non-ASCII
// letters onto ASCII ones (U+017F onto s, U+212A onto k), so a string with
// any non-ASCII byte always may.
func mayContainFold(s string, words ...string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return true
		}
	}
	l := strings.ToLower(s)
	for _, w := range words {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// SanitizeString makes s safe to show a model: the first line only, control
// characters removed, stack traces, SQL and a first line longer than 64
// KiB replaced by "[redacted]", URLs, host:port pairs, IP addresses,
// internal host names and the names in Go's certificate errors redacted,
// and the result capped at MaxErrorStringLen runes.
func SanitizeString(s string) string {
	return sanitizeLoop(firstLinePrintable(s), redactOnce)
}

// sanitizeLoop applies redact and the cap until nothing changes (at most
// four rounds): the cap can cut a string into a new match ("… 1.2.3.4567"
// ends as "1.2.3.45…", an address), which a second pass would redact, so
// one pass would not be idempotent, and the error maps the idempotency
// wrapper stores are sanitised again when a resumed invocation sends them
// back.
func sanitizeLoop(s string, redact func(string) string) string {
	for range 4 {
		t := trimAndCap(redact(s))
		if t == s {
			break
		}
		s = t
	}
	return s
}

// redactOnce is one pass of SanitizeString's patterns over a printable
// line.
func redactOnce(s string) string {
	// Each pattern runs only when s holds a substring every match of it
	// needs (the error path of a busy fleet sanitises every error map; most
	// strings are plain sentences).
	if (mayBeStack(s) && stackFrameRE.MatchString(s)) || (mayBeSQL(s) && sqlRE.MatchString(s)) {
		return redacted
	}
	if strings.Contains(s, "://") {
		s = urlRE.ReplaceAllString(s, redacted)
	}
	if mayContainFold(s, x509Words...) {
		s = redactX509(s)
	}
	if strings.Contains(s, "=") {
		s = dsnFieldRE.ReplaceAllString(s, "${1}="+redacted)
		s = secretFieldRE.ReplaceAllString(s, "${1}"+redacted)
	}
	if strings.Contains(s, ":") {
		if strings.Contains(s, `"`) {
			s = secretJSONRE.ReplaceAllString(s, `${1}"`+redacted+`"`)
		}
		if mayContainFold(s, secretNameWords...) {
			s = redactSecretColon(s)
		}
	}
	if mayContainFold(s, "authorization", "bearer", "api-key") {
		s = authValueRE.ReplaceAllString(s, "${1}"+redacted)
	}
	if strings.Contains(s, "/") || strings.Contains(s, `\`) {
		s = pathRE.ReplaceAllString(s, "${1}"+redacted)
	}
	if strings.Contains(s, ":") {
		s = ipv6RE.ReplaceAllString(s, redacted)
		if strings.Contains(s, "@") {
			s = userinfoRE.ReplaceAllString(s, redacted+"@")
		}
		s = netHostPortRE.ReplaceAllString(s, "${1}"+redacted)
		s = hostPortRE.ReplaceAllString(s, redacted)
	}
	if mayContainFold(s, "lookup") {
		s = lookupRE.ReplaceAllString(s, "${1}"+redacted+"${2}")
	}
	if strings.Contains(s, ".") {
		s = internalHost.ReplaceAllString(s, redacted)
		s = ipRE.ReplaceAllString(s, redacted)
	}
	// Last: a key-shaped label of a host or a file name
	// ("sk-prod-orders-db-01.internal:5432", "/srv/pk_exports_2024/x.db")
	// is redacted whole by the host and path patterns above; run first,
	// this pass left "[redacted].internal:5432", which they no longer see
	// as a host, and the port and domain reached the model (found in
	// review, twentieth session).
	if mayBeBareKey(s) {
		s = bareKeyRE.ReplaceAllStringFunc(s, redactBareKey)
	}
	return s
}

// bareKeyPrefixes: every match of bareKeyRE (case-sensitive) contains one
// of them.
var bareKeyPrefixes = []string{"sk-", "sk_", "pk-", "pk_", "rk-", "rk_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "AIza", "AKIA", "ASIA", "xox", "eyJ"}

// mayBeBareKey reports whether s may hold a match of bareKeyRE.
func mayBeBareKey(s string) bool {
	for _, p := range bareKeyPrefixes {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// redactBareKey returns "[redacted]" for a bareKeyRE match with a digit in
// it (random key material has one; a hyphenated name such as
// "sk-learn-compatible-estimators" has not), the match itself otherwise.
func redactBareKey(m string) string {
	if strings.ContainsAny(m, "0123456789") {
		return redacted
	}
	return m
}

// maxSanitizedLine caps the first line SanitizeString reads (in bytes):
// a longer one is redacted whole, as a stack trace is, before any pattern
// runs, so the patterns' work is bounded (about 0.1 s at 64 KiB for the
// costliest text; a 900 KB line took up to 2 s; found in review,
// twenty-first session).
//
// Cutting such a line to its first maxSanitizedLine bytes and redacting
// that would not be safe, whatever the bound: the output shows only
// MaxErrorStringLen runes, but redaction shortens text as well as
// lengthening it (a 60 KiB URL or quoted value becomes "[redacted]"), so
// text at any offset can be among the runes shown; and a pattern that
// needs text after the cut no longer matches, so what it would have
// hidden is shown: "select " + 64 KiB + " from t" is redacted whole, its
// first 64 KiB shows "select …"; userinfoRE needs the "@" after a
// password, a quoted value its closing quote, hostPortRE a host's port.
// Redacting the whole line shows nothing of it, so nothing the patterns
// would have hidden. A line this long is a dump (a page, a body), not a
// message for a model.
const maxSanitizedLine = 64 << 10

// firstLinePrintable is s's first line, as valid UTF-8 without control
// characters; a tab or another spacing control becomes a space, so words
// it separated stay apart ("SELECT\tid FROM" is still seen as SQL). A
// first line longer than maxSanitizedLine bytes is "[redacted]".
func firstLinePrintable(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	if len(s) > maxSanitizedLine {
		return redacted
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "")
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			if unicode.IsSpace(r) {
				return ' '
			}
			return -1
		}
		return r
	}, s)
}

// trimAndCap trims s and caps it at MaxErrorStringLen runes.
func trimAndCap(s string) string {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) > MaxErrorStringLen {
		r := []rune(s)
		s = string(r[:MaxErrorStringLen-1]) + "…"
	}
	return s
}

// Sanitize returns a copy of an error map with every string (also inside
// nested maps with string keys and slices, of any Go type) passed through
// SanitizeString, nesting capped at four levels; numbers (json.Number
// included) and bools are kept; a struct, a type with its own JSON or text
// form, and anything else becomes "[redacted]". Maps that are not error
// maps are returned unchanged. The agent loop applies it to every error
// map before the model sees it.
func Sanitize(m map[string]any) map[string]any {
	if !IsErrorMap(m) {
		return m
	}
	out, _ := sanitizeValue(m, 0).(map[string]any)
	if !IsErrorMap(out) {
		// A status only control characters kept from "ok" ("ok\x00"):
		// the sanitised map must still report the failure.
		out["status"] = StatusError
	}
	return out
}

// SanitizeAll is Sanitize for a map of any shape: every string (also
// inside nested maps and slices) passes through SanitizeString, an error
// map or not. The agent loop applies it to a map that answers a failure
// whatever its shape (an on-tool-error callback's {"error": err.Error()}
// has neither "status" nor "reason", and Sanitize would return it
// unchanged; found in review, eighteenth session). An error map is
// sanitised as Sanitize does; nil stays nil.
func SanitizeAll(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	if IsErrorMap(m) {
		return Sanitize(m)
	}
	out, _ := sanitizeValue(m, 0).(map[string]any)
	return out
}

// sanitizeKeys returns the sanitised keys of x in sorted order of the
// originals, each distinct: two keys that sanitise alike ("a\nx" and
// "a\ny" are both "a") would lose an entry, so a later one gets "#2",
// "#3", ... (deterministically: the originals are sorted).
func sanitizeKeys(x map[string]any) ([]string, []string) {
	orig := make([]string, 0, len(x))
	for k := range x {
		orig = append(orig, k)
	}
	sort.Strings(orig)
	taken := make(map[string]bool, len(x))
	out := make([]string, len(orig))
	for i, k := range orig {
		sk := SanitizeString(k)
		if taken[sk] {
			base := []rune(sk)
			if len(base) > MaxErrorStringLen-8 {
				base = base[:MaxErrorStringLen-8]
			}
			for n := 2; ; n++ {
				// Sanitised again: the cut can end in a new match
				// ("1.2.3.45#2"), and a second Sanitize must change nothing.
				c := string(base) + "#" + strconv.Itoa(n)
				if n < 1000 { // bounded: a candidate the patterns always rewrite alike is kept as it is
					c = SanitizeString(c)
				}
				if !taken[c] {
					sk = c
					break
				}
			}
		}
		taken[sk] = true
		out[i] = sk
	}
	return orig, out
}

func sanitizeValue(v any, depth int) any {
	if depth > 4 {
		return redacted
	}
	switch x := v.(type) {
	case string:
		return SanitizeString(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		orig, keys := sanitizeKeys(x)
		for i, k := range orig {
			out[keys[i]] = sanitizeValue(x[k], depth+1)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, vv := range x {
			out[i] = sanitizeValue(vv, depth+1)
		}
		return out
	case []string:
		out := make([]any, len(x))
		for i, vv := range x {
			out[i] = SanitizeString(vv)
		}
		return out
	case nil, bool, int, int32, int64, uint, uint32, uint64, float32, float64:
		return x
	case json.Number:
		if x == "" {
			return json.Number("0") // as json.Marshal writes it
		}
		if isJSONNumber(x) {
			return x
		}
		return SanitizeString(string(x))
	default:
		return sanitizeReflect(reflect.ValueOf(v), depth)
	}
}

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// sanitizeReflect is sanitizeValue for any other Go value, giving what
// sanitising its JSON form would give: a map with string keys, a slice or
// an array has its elements sanitised (a nil one is nil), a named string is
// sanitised, a bool or a number is kept (as its base type), and a value
// JSON writes its own way (a struct, a []byte, a type with a MarshalJSON or
// MarshalText method, a map with other keys) is encoded, decoded and
// sanitised. What JSON cannot encode is "[redacted]".
func sanitizeReflect(rv reflect.Value, depth int) any {
	for i := 0; rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface; i++ {
		if rv.IsNil() {
			return nil
		}
		if hasMarshaler(rv.Type()) {
			return redacted
		}
		if i == 8 { // a pointer to itself
			return redacted
		}
		rv = rv.Elem()
	}
	// A type that chooses its own JSON form (often to hide what it
	// holds), and a struct, are not walked: a copy would skip a
	// pointer-receiver MarshalJSON, and a struct's JSON is not bounded by
	// the depth cap (found in review of this session's fix, twenty-second
	// session).
	if hasMarshaler(rv.Type()) {
		return redacted
	}
	switch rv.Kind() {
	case reflect.String:
		return SanitizeString(rv.String())
	case reflect.Bool:
		return rv.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return rv.Uint()
	case reflect.Float32:
		return float32(rv.Float())
	case reflect.Float64:
		return rv.Float()
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String || hasMarshaler(rv.Type().Key()) {
			return redacted
		}
		if rv.IsNil() {
			return nil
		}
		m := make(map[string]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			m[it.Key().String()] = it.Value().Interface()
		}
		return sanitizeValue(m, depth)
	case reflect.Slice, reflect.Array:
		if hasMarshaler(rv.Type().Elem()) {
			return redacted
		}
		if rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() == reflect.Uint8 {
			return sanitizeViaJSON(rv.Interface(), depth) // base64
		}
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return nil
		}
		s := make([]any, rv.Len())
		for i := range s {
			s[i] = rv.Index(i).Interface()
		}
		return sanitizeValue(s, depth)
	}
	return redacted
}

// hasMarshaler reports whether t or *t chooses its own JSON form.
func hasMarshaler(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return t.Implements(jsonMarshalerType) || t.Implements(textMarshalerType) ||
		pt.Implements(jsonMarshalerType) || pt.Implements(textMarshalerType)
}

// sanitizeViaJSON sanitises v's JSON form (numbers as json.Number), or
// returns "[redacted]" when v does not encode.
func sanitizeViaJSON(v any, depth int) any {
	raw, err := json.Marshal(v)
	if err != nil {
		return redacted
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var d any
	if dec.Decode(&d) != nil {
		return redacted
	}
	return sanitizeValue(d, depth)
}

// isJSONNumber reports whether n is a JSON number literal, as json.Marshal
// requires of a json.Number.
func isJSONNumber(n json.Number) bool {
	s := string(n)
	return s != "" && (s[0] == '-' || ('0' <= s[0] && s[0] <= '9')) && strings.TrimSpace(s) == s && json.Valid([]byte(s))
}

// sentenceWords are words that follow "password:" (or another secret's
// name and a colon) in a message about a password rather than in a line
// holding one ("Invalid password: must be at least 8 characters", "wrong
// password: account locked", "Invalid api_key: must be 32 characters").
var sentenceWords = map[string]bool{
	"must": true, "is": true, "are": true, "was": true, "were": true, "be": true, "should": true,
	"cannot": true, "can't": true, "can": true, "could": true, "too": true, "not": true, "does": true,
	"doesn't": true, "did": true, "didn't": true, "do": true, "has": true, "had": true, "have": true,
	"needs": true, "need": true, "requires": true, "required": true, "expired": true, "incorrect": true,
	"invalid": true, "wrong": true, "reset": true, "changed": true, "account": true, "mismatch": true,
	"missing": true, "empty": true, "for": true, "and": true, "or": true, "the": true, "a": true,
	"an": true, "of": true, "to": true, "contains": true, "length": true, "minimum": true,
	"maximum": true, "will": true, "would": true, "may": true, "policy": true, "isn't": true,
	"none": true, "unchanged": true, "rejected": true, "accepted": true, "ok": true,
	"eof":        true, // a parser's "unexpected token: EOF"
	"permission": true, "denied": true, "forbidden": true, "unauthorized": true, "expires": true,
}

// redactSecretColon redacts the values of secretColonRE's matches, but
// for a bare word of sentenceWords, and, after a parser's "(un)expected
// token" or a signature, a value with no letter or digit or any plain
// word: those name a token of a grammar, not a credential ("unexpected
// token: } at offset 14", "unexpected token: EOF"). A password made of
// symbols only is still redacted.
func redactSecretColon(s string) string {
	idx := secretColonRE.FindAllStringSubmatchIndex(s, -1)
	if idx == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range idx {
		name, v := s[m[2]:m[3]], s[m[4]:m[5]]
		b.WriteString(s[last:m[0]])
		last = m[1]
		if keepSecretColon(s[:m[0]], name, v) {
			b.WriteString(s[m[0]:m[1]])
			continue
		}
		b.WriteString(name)
		b.WriteString(redacted)
	}
	b.WriteString(s[last:])
	return b.String()
}

// keepSecretColon reports whether the value v after name (a secretColonRE
// match, before its text) is an ordinary word rather than a secret.
func keepSecretColon(before, name, v string) bool {
	if v == "" || v[0] == '\'' || v[0] == '"' || v[0] == '[' {
		return false
	}
	if sentenceWords[strings.ToLower(strings.TrimRight(v, ".!?:)"))] {
		return true
	}
	bare := strings.ToLower(strings.TrimRight(strings.TrimSpace(name), ":"))
	grammar := bare == "signature" || (bare == "token" && precededByWord(before, "unexpected", "expected"))
	if !grammar && bare == "token" {
		// "token: }" alone: no credential is punctuation only.
		grammar = !strings.ContainsFunc(v, isAlnum)
	}
	if !grammar {
		return false
	}
	// After a grammar's "token": any value but one that looks like a
	// credential (long, with letters and digits, or a known key prefix).
	return !strings.ContainsFunc(v, isAlnum) || !credentialLike(v)
}

// precededByWord reports whether the last word of before is one of words
// (ASCII case ignored).
func precededByWord(before string, words ...string) bool {
	f := strings.Fields(before)
	if len(f) == 0 {
		return false
	}
	w := strings.ToLower(strings.Trim(f[len(f)-1], "\"'(:,"))
	for _, x := range words {
		if w == x {
			return true
		}
	}
	return false
}

func isAlnum(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// credentialLike reports whether v looks like a key or token value: 16
// characters or more mixing letters and digits, or a known key prefix.
func credentialLike(v string) bool {
	lv := strings.ToLower(v)
	for _, p := range []string{"sk-", "sk_", "pk_", "rk_", "ghp_", "gho_", "xox", "aiza", "eyj", "akia"} {
		if strings.HasPrefix(lv, p) {
			return true
		}
	}
	return len(v) >= 16 && strings.ContainsFunc(v, unicode.IsLetter) && strings.ContainsFunc(v, unicode.IsDigit)
}
