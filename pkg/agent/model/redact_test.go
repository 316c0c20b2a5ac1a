package model

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestRedactKey: every occurrence of the key (trimmed) is replaced; text
// without it and a placeholder key shorter than MinRedactedKeyLen are left
// alone.
func TestRedactKey(t *testing.T) {
	const key = "sk-proj-0123456789abcdef"
	for _, tc := range []struct{ s, key, want string }{
		{"key=" + key + " not found; " + key, " " + key + "\n", "key=" + RedactedKey + " not found; " + RedactedKey},
		{"no key here", key, "no key here"},
		{"model ollama/llama3 not found", "ollama", "model ollama/llama3 not found"},
		{"anything", "", "anything"},
		{"", key, ""},
	} {
		if got := RedactKey(tc.s, tc.key); got != tc.want {
			t.Errorf("RedactKey(%q, %q) = %q, want %q", tc.s, tc.key, got, tc.want)
		}
	}
}

// TestRedactKeyErrorKeepsChain: the redacted error's text has the key
// replaced everywhere, and it still unwraps to the original error (its
// types reachable through errors.As and errors.Is); an error without the
// key, and nil, are returned as they are.
func TestRedactKeyErrorKeepsChain(t *testing.T) {
	const key = "sk-proj-0123456789abcdef"
	sentinel := errors.New("sentinel")
	inner := &ProviderError{Provider: "test", StatusCode: 401, Message: "token " + key + " refused", Err: sentinel}
	err := RedactKeyError(fmt.Errorf("test: call (model %s): %w", key, inner), key)
	if got := err.Error(); strings.Contains(got, key) || strings.Count(got, RedactedKey) != 2 {
		t.Errorf("text %q: want the key replaced by %q everywhere", got, RedactedKey)
	}
	var pe *ProviderError
	if !errors.As(err, &pe) || pe != inner || !errors.Is(err, sentinel) {
		t.Errorf("%v: the redacted error lost its chain", err)
	}
	plain := errors.New("no key here")
	if got := RedactKeyError(plain, key); got != plain {
		t.Errorf("an error without the key was wrapped: %T", got)
	}
	if got := RedactKeyError(plain, ""); got != plain {
		t.Errorf("an empty key wrapped the error: %T", got)
	}
	if RedactKeyError(nil, key) != nil {
		t.Error("nil error wrapped")
	}
}
