package natskv

import (
	"fmt"
	"strings"
)

// IndexKeyPrefix is the first token of the KV keys that index invocations.
const IndexKeyPrefix = "idem-invocation"

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

// KVKey maps an idempotency key to its NATS KV key: each ':'-separated
// segment is escaped with escapeToken and the segments are joined with '.',
// so "idem:support:refund:<hash>" becomes "idem.support.refund.<hash>" and
// any other byte (including '.', '=' and '/') becomes "=XX". KV keys allow
// only [-/_=.a-zA-Z0-9] with '.' separating tokens; use KVKey to find a
// record with the nats CLI ("nats kv get <bucket> <KVKey>").
func KVKey(key string) string {
	segs := strings.Split(key, ":")
	for i, s := range segs {
		segs[i] = escapeToken(s)
	}
	return strings.Join(segs, ".")
}

// IndexKey is the KV key of an invocation's index entry.
func IndexKey(invocationID string) string {
	return IndexKeyPrefix + "." + escapeToken(invocationID)
}
