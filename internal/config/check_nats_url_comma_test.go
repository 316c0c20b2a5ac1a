package config_test

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/config"
)

// Regression (found in review of this session's fix, twenty-second
// session): CheckNATSURL redacted each server on its own (RedactNATSURL(p) of one
// trimmed part), so the list context RedactNATSURL relies on ("a part that
// does not parse, in a list with user info somewhere, may be the start of a
// secret the comma cut") is lost: a password holding a comma leaks its
// first half in the error Validate prints (exit 2 message, logs).
func TestCheckNATSURLHidesPasswordCutByComma(t *testing.T) {
	for _, in := range []string{
		"nats://user:pa55,word@host:4222",
		"user:pa55,word@host:4222", // no scheme: nats.go prefixes nats://
		"tcp://user:pa55,word@host:4222",
	} {
		if whole := config.RedactNATSURL(in); strings.Contains(whole, "pa55") {
			t.Fatalf("precondition: RedactNATSURL(%q) = %q", in, whole)
		}
		err := config.CheckNATSURL(in)
		if err == nil {
			t.Fatalf("CheckNATSURL(%q) = nil", in)
		}
		if strings.Contains(err.Error(), "pa55") {
			t.Errorf("CheckNATSURL(%q) error quotes the password's start: %v", in, err)
		}
	}
}
