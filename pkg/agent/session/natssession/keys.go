package natssession

import (
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// MaxKeyLen is the longest KV key the package reads or writes, in bytes of
// the encoded key (the base64url-encoded ids joined with '.'; the bucket's
// "$KV.<bucket>." prefix not included). A key is part of the subject of
// every KV operation ("$KV.<bucket>.<key>", and a direct get's
// "$JS.API.DIRECT.GET.KV_<bucket>.$KV.<bucket>.<key>"), and a NATS server
// closes a client's connection for good when a protocol line exceeds its
// max_control_line (4 KiB by default): every other user of the connection
// then fails. With bucket names within the server's name limit (255 bytes)
// the longest such line stays under 2 KiB. A key longer than this is
// refused with ErrKeyTooLong before anything is sent.
//
// Ids within the request envelope's limits (agent 128 bytes, user and
// session id 256 bytes each) make session keys of at most 856 bytes, and an
// invocation id (at most 128 bytes) a key of at most 171: the worker's keys
// always fit. A session key's three ids may take about 760 bytes together.
const MaxKeyLen = 1024

// ErrKeyTooLong is returned (wrapped) by every call given a session key or
// invocation id whose KV key would exceed MaxKeyLen; nothing is sent to the
// server.
var ErrKeyTooLong = errors.New("natssession: key too long for a NATS subject")

// encode maps an id segment to KV key characters: base64url without padding
// uses only [A-Za-z0-9_-], never '.', so joining segments with '.' stays
// injective.
func encode(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// encodedLen is len(encode(s)), without encoding.
func encodedLen(s string) int { return base64.RawURLEncoding.EncodedLen(len(s)) }

// sessionKey is the KV key of a session (and of its lock), or an error
// wrapping ErrKeyTooLong when it would exceed MaxKeyLen.
func sessionKey(k session.Key) (string, error) {
	if n := encodedLen(k.App) + encodedLen(k.UserID) + encodedLen(k.SessionID) + 2; n > MaxKeyLen {
		return "", fmt.Errorf("natssession: session key of app, user and session ids of %d, %d and %d bytes encodes to %d bytes, limit %d: %w",
			len(k.App), len(k.UserID), len(k.SessionID), n, MaxKeyLen, ErrKeyTooLong)
	}
	return encode(k.App) + "." + encode(k.UserID) + "." + encode(k.SessionID), nil
}

// invocationKey is the KV key of an invocation record, or an error wrapping
// ErrKeyTooLong when it would exceed MaxKeyLen.
func invocationKey(id string) (string, error) {
	if n := encodedLen(id); n > MaxKeyLen {
		return "", fmt.Errorf("natssession: invocation id of %d bytes encodes to %d bytes, limit %d: %w", len(id), n, MaxKeyLen, ErrKeyTooLong)
	}
	return encode(id), nil
}
