package redissession

import (
	"strings"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// escaper percent-encodes the characters that structure a key: '%' itself
// (so the encoding is reversible and injective), ':' (the segment
// separator) and the braces of the hash tag.
var escaper = strings.NewReplacer("%", "%25", ":", "%3A", "{", "%7B", "}", "%7D")

// escape encodes one key segment. Most segments hold none of the four
// characters and are returned as they are, without the replacer's work.
func escape(s string) string {
	if !strings.ContainsAny(s, "%:{}") {
		return s
	}
	return escaper.Replace(s)
}

// keys are the Redis keys of one session.
type keys struct {
	events, state, meta, lock string
}

func (c Config) sessionKeys(k session.Key) keys {
	tag := "{" + escape(k.App) + ":" + escape(k.UserID) + ":" + escape(k.SessionID) + "}"
	base := c.Prefix + "sess:" + tag
	return keys{
		events: base + ":events",
		state:  base + ":state",
		meta:   base + ":meta",
		lock:   c.Prefix + "lock:" + tag,
	}
}

func (c Config) invocationKey(id string) string {
	return c.Prefix + "inv:{" + escape(id) + "}"
}
