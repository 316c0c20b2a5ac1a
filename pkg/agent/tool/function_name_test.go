package tool

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// Regression (found in review, twentieth session): NewFunc accepted any
// non-empty name, but a function name with a space, a character outside
// [A-Za-z0-9_-] or more than 64 characters is refused by a provider
// (OpenAI: ^[a-zA-Z0-9_-]{1,64}$; Gemini: a letter or '_' first, then
// letters, digits, _ . : -, at most 64). Every declaration goes into every
// model request, so one such tool failed every invocation of the agent
// with a 400 (BAD_REQUEST: dead-lettered and paged), not only those that
// call it, and nothing refused it at start-up (Runner.CheckTools only
// resolves schemas).
func TestNewFuncRefusesNamesProvidersReject(t *testing.T) {
	fn := func(context.Context, struct{}) (map[string]any, error) { return nil, nil }
	for _, name := range []string{"get order", "refund/order", "lookup\n", strings.Repeat("a", 65),
		"orders.get", "ns:get", "1st_tool", "-tool", "naïve"} {
		if _, err := NewFunc(name, "", fn); !errors.Is(err, ErrInvalidName) {
			t.Errorf("NewFunc(%q) = %v, want the name refused (ErrInvalidName)", name, err)
		}
	}
	for _, name := range []string{"get_order", "refund-order", "_private", "A", strings.Repeat("a", 64)} {
		if _, err := NewFunc(name, "", fn); err != nil {
			t.Errorf("NewFunc(%q) = %v, want it accepted", name, err)
		}
	}
}
