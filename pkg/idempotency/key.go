package idempotency

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"strings"
	"unicode"

	"github.com/gowebpki/jcs"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
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
	prefix := in.Prefix
	if prefix == "" {
		prefix = DefaultKeyPrefix
	}
	for _, seg := range []struct{ name, v string }{{"prefix", prefix}, {"agent", in.Agent}, {"tool", in.Tool}} {
		if err := ValidateSegment(seg.v); err != nil {
			return Key{}, fmt.Errorf("idempotency: key %s: %w", seg.name, err)
		}
	}
	if in.InvocationID == "" {
		return Key{}, ErrNoInvocationID
	}
	canon, err := CanonicalArgs(in.Tool, in.Args, in.KeyFields)
	if err != nil {
		return Key{}, err
	}
	h := sha256.New()
	writeField(h, keyHashVersion)
	writeField(h, in.InvocationID)
	writeField(h, in.Tool)
	writeField(h, string(canon))
	return Key{Prefix: prefix, Agent: in.Agent, Tool: in.Tool, Hash: hex.EncodeToString(h.Sum(nil))}, nil
}

func writeField(h hash.Hash, s string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(s)))
	h.Write(n[:])
	h.Write([]byte(s))
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
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, &tool.ArgumentError{Tool: toolName, Detail: "arguments are not JSON: " + tool.SanitizeString(err.Error())}
	}
	canon, err := jcs.Transform(raw)
	if err != nil {
		return nil, &tool.ArgumentError{Tool: toolName, Detail: "arguments cannot be canonicalised: " + tool.SanitizeString(err.Error())}
	}
	return canon, nil
}

// ArgsHash returns the hex SHA-256 of the canonical JSON of all arguments.
// It is stored next to a completed result so that a replay whose non-key
// arguments differ can be reported.
func ArgsHash(toolName string, args map[string]any) (string, error) {
	canon, err := CanonicalArgs(toolName, args, nil)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}
