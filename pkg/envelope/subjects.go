package envelope

import (
	"errors"
	"fmt"
	"strings"
)

// Subject helpers for the default subject layout (DESIGN.md). The prefixes
// are configurable in the stream configuration; these use the defaults.
const (
	DefaultRequestPrefix = "agent.requests"
	DefaultResultPrefix  = "agent.results"
	DefaultDLQPrefix     = "agent.dlq"
)

// RequestSubject returns "<prefix>.<agent>".
func RequestSubject(prefix, agent string) string { return prefix + "." + agent }

// ResultSubject returns "<prefix>.<invocation_id>".
func ResultSubject(prefix, invocationID string) string { return prefix + "." + invocationID }

// DLQSubject returns "<prefix>.<class>.<agent>".
func DLQSubject(prefix, class, agent string) string { return prefix + "." + class + "." + agent }

// ValidateStreamName checks a stream or consumer name: it becomes an API
// subject token, so no dots, wildcards, white space or path separators, and
// at most 64 bytes. The error says what is wrong.
func ValidateStreamName(s string) error {
	switch {
	case s == "":
		return errors.New("empty")
	case len(s) > 64:
		return errors.New("longer than 64 bytes")
	case strings.ContainsAny(s, ".*> \t\r\n/\\"):
		return fmt.Errorf("%q contains one of . * > / \\ or white space", s)
	}
	return nil
}

// ValidateSubjectPrefix checks a subject prefix: non-empty tokens, no
// wildcards or white space. The error says what is wrong.
func ValidateSubjectPrefix(s string) error {
	if s == "" {
		return errors.New("empty")
	}
	if strings.ContainsAny(s, "*> \t\r\n") {
		return fmt.Errorf("%q contains a wildcard or white space", s)
	}
	for _, tok := range strings.Split(s, ".") {
		if tok == "" {
			return fmt.Errorf("%q has an empty token", s)
		}
	}
	return nil
}
