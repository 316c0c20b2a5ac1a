package idempotency

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode"
)

// DefaultKeyPrefix is the first segment of every key unless Options.KeyPrefix
// says otherwise.
const DefaultKeyPrefix = "idem"

// keyHashVersion is the first hashed field; changing the hash input changes it.
const keyHashVersion = "agentfleet.idempotency.v1"

// Key is an idempotency key. Its string form is
// "<Prefix>:<Agent>:<Tool>:<Hash>", the form stores use and tools pass
// downstream.
type Key struct {
	// Prefix is the configurable first segment (DefaultKeyPrefix).
	Prefix string
	// Agent is the agent name.
	Agent string
	// Tool is the tool name.
	Tool string
	// Hash is the lower-case hex SHA-256 described at DeriveKey.
	Hash string
}

// String returns "<Prefix>:<Agent>:<Tool>:<Hash>".
func (k Key) String() string {
	return k.Prefix + ":" + k.Agent + ":" + k.Tool + ":" + k.Hash
}

// KeyInput is what a key is derived from.
type KeyInput struct {
	// Prefix is the first key segment; empty means DefaultKeyPrefix.
	Prefix string
	// Agent is the agent name.
	Agent string
	// InvocationID is the invocation the call belongs to.
	InvocationID string
	// Tool is the tool name.
	Tool string
	// Args are the call's arguments (nil is the empty object).
	Args map[string]any
	// KeyFields, when not empty, are the only top-level arguments that take
	// part in the key. Each must be present (a JSON null counts as present).
	KeyFields []string
}

// DeriveKey derives the key of one tool call.
//
// Hash = SHA-256 over four length-prefixed fields, each written as its length
// in bytes (8 bytes, big-endian) followed by the bytes:
//
//  1. the version tag "agentfleet.idempotency.v1",
//  2. the invocation id,
//  3. the tool name,
//  4. the canonical arguments (CanonicalArgs): RFC 8785 (JCS) JSON of the
//     arguments, or of only the key fields when KeyFields is set.
//
// Length prefixes make the input unambiguous whatever bytes the fields hold.
// Prefix, Agent and Tool must be non-empty and free of ':' and control
// characters (they are key segments); a missing key field is a
// *KeyFieldError.
func DeriveKey(in KeyInput) (Key, error) {
	prefix, err := checkKeyInput(in)
	if err != nil {
		return Key{}, err
	}
	canon, err := CanonicalArgs(in.Tool, in.Args, in.KeyFields)
	if err != nil {
		return Key{}, err
	}
	return keyOf(prefix, in, canon), nil
}

// deriveKeyAndArgsHash is DeriveKey and ArgsHash of the same call, with
// the arguments canonicalised once when every argument is part of the key.
// Errors come in DeriveKey's order, then ArgsHash's.
func deriveKeyAndArgsHash(in KeyInput) (Key, string, error) {
	if len(in.KeyFields) > 0 {
		key, err := DeriveKey(in)
		if err != nil {
			return Key{}, "", err
		}
		h, err := ArgsHash(in.Tool, in.Args)
		return key, h, err
	}
	prefix, err := checkKeyInput(in)
	if err != nil {
		return Key{}, "", err
	}
	canon, err := CanonicalArgs(in.Tool, in.Args, nil)
	if err != nil {
		return Key{}, "", err
	}
	return keyOf(prefix, in, canon), hashHex(canon), nil
}

// checkKeyInput returns the key's prefix (the default when empty), or what
// makes in unusable for a key.
func checkKeyInput(in KeyInput) (string, error) {
	prefix := in.Prefix
	if prefix == "" {
		prefix = DefaultKeyPrefix
	}
	for _, seg := range []struct{ name, v string }{{"prefix", prefix}, {"agent", in.Agent}, {"tool", in.Tool}} {
		if err := ValidateSegment(seg.v); err != nil {
			return "", fmt.Errorf("idempotency: key %s: %w", seg.name, err)
		}
	}
	if in.InvocationID == "" {
		return "", ErrNoInvocationID
	}
	return prefix, nil
}

// keyOf hashes the key's fields, canon being the canonical arguments.
func keyOf(prefix string, in KeyInput, canon []byte) Key {
	var buf [256]byte
	b := appendField(buf[:0], []byte(keyHashVersion))
	b = appendField(b, []byte(in.InvocationID))
	b = appendField(b, []byte(in.Tool))
	b = appendField(b, canon)
	return Key{Prefix: prefix, Agent: in.Agent, Tool: in.Tool, Hash: hashHex(b)}
}

// appendField appends one hashed field: its length in bytes (8 bytes,
// big-endian), then the bytes.
func appendField(b, field []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(len(field)))
	return append(b, field...)
}

// ValidateSegment reports a key segment (prefix, agent or tool name) that is
// empty or contains ':' or a control or space character.
func ValidateSegment(s string) error {
	if s == "" {
		return fmt.Errorf("empty segment")
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return r == ':' || unicode.IsControl(r) || unicode.IsSpace(r) }); i >= 0 {
		return fmt.Errorf("segment %q contains %q", s, s[i:i+1])
	}
	return nil
}

// CanonicalArgs returns the RFC 8785 canonical JSON of args (sorted keys,
// ECMAScript number form so 1.0 and 1 are equal, no insignificant
// whitespace), restricted to keyFields when keyFields is not empty. nil args
// are the empty object. A missing key field is a *KeyFieldError; arguments
// that are not JSON (NaN, channels) are a *tool.ArgumentError.
func CanonicalArgs(toolName string, args map[string]any, keyFields []string) ([]byte, error) {
	var v map[string]any
	if len(keyFields) == 0 {
		v = args
	} else {
		v = make(map[string]any, len(keyFields))
		for _, f := range keyFields {
			x, ok := args[f]
			if !ok {
				return nil, &KeyFieldError{Tool: toolName, Field: f}
			}
			v[f] = x
		}
	}
	if v == nil {
		v = map[string]any{}
	}
	return canonicalJSON(toolName, v)
}

// ArgsHash returns the hex SHA-256 of the canonical JSON of all arguments.
// It is stored next to a completed result so that a replay whose non-key
// arguments differ can be reported.
func ArgsHash(toolName string, args map[string]any) (string, error) {
	canon, err := CanonicalArgs(toolName, args, nil)
	if err != nil {
		return "", err
	}
	return hashHex(canon), nil
}

// hashHex is the lower-case hex SHA-256 of b.
func hashHex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
