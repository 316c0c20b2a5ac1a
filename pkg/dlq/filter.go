package dlq

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Filter selects DLQ entries. Zero fields match everything. Class and Agent
// become the subject filter (<prefix>.<class>.<agent>) so the server skips
// other entries; InvocationID is matched against the HeaderInvocationID
// header and Since/Until against the time the server stored the entry, both
// before decoding.
type Filter struct {
	// Class selects one failure class.
	Class string
	// Agent selects one agent (UnknownAgent for undecodable requests).
	Agent string
	// InvocationID selects the entries of one invocation.
	InvocationID string
	// Since and Until bound the stored time: Since <= t < Until.
	Since time.Time
	Until time.Time // Until is the exclusive upper bound on the stored time.
	// FromSeq starts the walk at this stream sequence (default 1).
	FromSeq uint64
}

// subject returns the subject filter for f under prefix.
func (f Filter) subject(prefix string) string {
	class, agent := "*", "*"
	if f.Class != "" {
		class = f.Class
	}
	if f.Agent != "" {
		agent = f.Agent
	}
	return prefix + "." + class + "." + agent
}

// matchesMeta applies the checks that need no decoding.
func (f Filter) matchesMeta(it *Item) bool {
	if !f.Since.IsZero() && it.Time.Before(f.Since) {
		return false
	}
	if !f.Until.IsZero() && !it.Time.Before(f.Until) {
		return false
	}
	if f.InvocationID != "" && it.Header.Get(HeaderInvocationID) != f.InvocationID {
		return false
	}
	return true
}

// validate rejects filter tokens that would widen the subject filter.
func (f Filter) validate() error {
	for _, tok := range []string{f.Class, f.Agent} {
		if strings.ContainsAny(tok, ".*> \t\r\n") {
			return fmt.Errorf("dlq: filter token %q: %w", tok, ErrInvalidFilter)
		}
	}
	return nil
}

// ErrInvalidFilter is returned by List for a Class or Agent that is not a
// single subject token.
var ErrInvalidFilter = errors.New("dlq: invalid filter")
