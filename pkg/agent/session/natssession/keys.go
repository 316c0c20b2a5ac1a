package natssession

import (
	"encoding/base64"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// encode maps an id segment to KV key characters: base64url without padding
// uses only [A-Za-z0-9_-], never '.', so joining segments with '.' stays
// injective.
func encode(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// sessionKey is the KV key of a session (and of its lock).
func sessionKey(k session.Key) string {
	return encode(k.App) + "." + encode(k.UserID) + "." + encode(k.SessionID)
}

// invocationKey is the KV key of an invocation record.
func invocationKey(id string) string { return encode(id) }
