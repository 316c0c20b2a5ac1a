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

// sessionKeys builds the four keys in one string and slices them from it:
// one allocation instead of six (it runs several times per invocation).
func (c Config) sessionKeys(k session.Key) keys {
	app, user, sess := escape(k.App), escape(k.UserID), escape(k.SessionID)
	tagLen := len(app) + len(user) + len(sess) + 4 // {app:user:sess}
	baseLen := len(c.Prefix) + len("sess:") + tagLen
	var b strings.Builder
	b.Grow(3*baseLen + len(":events:state:meta") + len(c.Prefix) + len("lock:") + tagLen)
	tag := func() {
		b.WriteByte('{')
		b.WriteString(app)
		b.WriteByte(':')
		b.WriteString(user)
		b.WriteByte(':')
		b.WriteString(sess)
		b.WriteByte('}')
	}
	for _, part := range []string{":events", ":state", ":meta"} {
		b.WriteString(c.Prefix)
		b.WriteString("sess:")
		tag()
		b.WriteString(part)
	}
	b.WriteString(c.Prefix)
	b.WriteString("lock:")
	tag()
	all := b.String()
	ev := baseLen + len(":events")
	st := ev + baseLen + len(":state")
	me := st + baseLen + len(":meta")
	return keys{events: all[:ev], state: all[ev:st], meta: all[st:me], lock: all[me:]}
}

func (c Config) invocationKey(id string) string {
	return c.Prefix + "inv:{" + escape(id) + "}"
}
