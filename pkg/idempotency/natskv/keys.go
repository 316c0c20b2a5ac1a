package natskv

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// IndexKeyPrefix is the first token of the KV keys that index invocations.
const IndexKeyPrefix = "idem-invocation"

// MaxKeyLen is the longest KV key the store reads or writes, in bytes of
// the escaped key (KVKey or IndexKey; the bucket's "$KV.<bucket>." prefix
// not included). A key is part of the subject of every KV operation
// ("$KV.<bucket>.<key>", and a direct get's
// "$JS.API.DIRECT.GET.KV_<bucket>.$KV.<bucket>.<key>"), and a NATS server
// closes a client's connection for good when a protocol line exceeds its
// max_control_line (4 KiB by default): every other user of the connection
// (sessions, locks, the worker's consumer) then fails. With bucket names
// within the server's name limit (255 bytes) the longest such line stays
// under 2 KiB. Escaping takes three bytes for each byte outside
// [A-Za-z0-9_-], so a key of non-ASCII text may take a third of this. A
// longer key is refused with an error wrapping idempotency.ErrKeyTooLong
// before anything is sent.
//
// The worker's keys fit: "<prefix>:<agent>:<tool>:<hash>" with the default
// prefix, an agent name within the request envelope's limit (at most 128
// bytes of [A-Za-z0-9_-]) and the 64-byte hash takes 199 bytes besides the
// tool name (three per byte outside [A-Za-z0-9_-]), and an index key of an
// invocation id within the envelope's limit (128 bytes of [A-Za-z0-9_-])
// at most 144.
const MaxKeyLen = 1024

// isPlain reports the bytes kept as they are in a KV key token.
func isPlain(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// escapeToken escapes s into one KV key token: bytes outside
// [A-Za-z0-9_-] become "=XX" (upper-case hex), the empty string becomes "=".
// The mapping is injective and never yields '.', so tokens stay tokens.
func escapeToken(s string) string {
	if s == "" {
		return "="
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isPlain(c) {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "=%02X", c)
		}
	}
	return b.String()
}

// escapedLen is len(escapeToken(s)), without escaping.
func escapedLen(s string) int {
	if s == "" {
		return 1
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if isPlain(s[i]) {
			n++
		} else {
			n += 3
		}
	}
	return n
}

// KVKey maps an idempotency key to its NATS KV key: each ':'-separated
// segment is escaped with escapeToken and the segments are joined with '.',
// so "idem:support:refund:<hash>" becomes "idem.support.refund.<hash>" and
// any other byte (including '.', '=' and '/') becomes "=XX". KV keys allow
// only [-/_=.a-zA-Z0-9] with '.' separating tokens; use KVKey to find a
// record with the nats CLI ("nats kv get <bucket> <KVKey>"). The store
// refuses keys whose KVKey would exceed MaxKeyLen.
func KVKey(key string) string {
	segs := strings.Split(key, ":")
	for i, s := range segs {
		segs[i] = escapeToken(s)
	}
	return strings.Join(segs, ".")
}

// IndexKey is the KV key of an invocation's index entry. The store refuses
// invocation ids whose IndexKey would exceed MaxKeyLen.
func IndexKey(invocationID string) string {
	return IndexKeyPrefix + "." + escapeToken(invocationID)
}

// boundedKVKey is KVKey(key), or an error wrapping
// idempotency.ErrKeyTooLong when it would exceed MaxKeyLen.
func boundedKVKey(op, key string) (string, error) {
	n := strings.Count(key, ":") // the dots joining the segments
	for seg := range strings.SplitSeq(key, ":") {
		n += escapedLen(seg)
	}
	if n > MaxKeyLen {
		return "", fmt.Errorf("natskv %s: key %s of %d bytes escapes to a KV key of %d bytes, limit %d: %w",
			op, abbrev(key), len(key), n, MaxKeyLen, idempotency.ErrKeyTooLong)
	}
	return KVKey(key), nil
}

// boundedIndexKey is IndexKey(invocationID), or an error wrapping
// idempotency.ErrKeyTooLong when it would exceed MaxKeyLen.
func boundedIndexKey(op, invocationID string) (string, error) {
	if n := len(IndexKeyPrefix) + 1 + escapedLen(invocationID); n > MaxKeyLen {
		return "", fmt.Errorf("natskv %s: invocation id %s of %d bytes escapes to an index key of %d bytes, limit %d: %w",
			op, abbrev(invocationID), len(invocationID), n, MaxKeyLen, idempotency.ErrKeyTooLong)
	}
	return IndexKey(invocationID), nil
}

// abbrevLen is how many bytes of a refused key or id its error quotes.
const abbrevLen = 64

// abbrev quotes s, cut to at most its first abbrevLen bytes (at a rune
// boundary): an error for a key of kilobytes does not repeat it whole in
// every log line.
func abbrev(s string) string {
	if len(s) <= abbrevLen {
		return fmt.Sprintf("%q", s)
	}
	n := abbrevLen
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%q…", s[:n])
}
