package tool_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// Regression (found in review, eighteenth session): The "name: value" form now covers Go's %+v of a struct and %v of a map
// (secretColonRE), but its value is one bare word: a secret held as a
// []byte (an HMAC or webhook signing secret, a JWT key) or a list prints
// as "[119 104 115 ...]", and only "[119" is redacted. The rest of the
// secret's bytes reach the model (and may be echoed to the user).
func TestSecretPrintedAsAByteSliceIsRedactedWhole(t *testing.T) {
	type webhookConfig struct {
		URL    string
		Secret []byte
	}
	secret := []byte("whsec_abcdef")
	bytesText := strings.Trim(fmt.Sprint(secret), "[]") // "119 104 115 ..."
	cases := map[string]struct{ in, leak string }{
		"struct %+v []byte": {fmt.Sprintf("webhook %+v: 401 Unauthorized", webhookConfig{URL: "hooks", Secret: secret}),
			strings.Join(strings.Fields(bytesText)[1:], " ")},
		"map %v []string": {fmt.Sprintf("bad settings %v", map[string][]string{"api_key": {"sk-live-primary1", "sk-live-backup22"}}),
			"sk-live-backup22"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got := tool.SanitizeString(c.in)
			if strings.Contains(got, c.leak) {
				t.Errorf("SanitizeString(%q) = %q: the secret's rest %q reaches the model", c.in, got, c.leak)
			}
		})
	}
}

// Regression (found in review, eighteenth session): redactPasswordColon redacted any bare value after "password:"; the new
// redactSecretColon keeps a value with no letter or digit (meant for a
// parser's "unexpected token: }"), for every name, password included. A
// password made of symbols only now reaches the model.
func TestSymbolOnlyPasswordIsStillRedacted(t *testing.T) {
	in := "login to orders-admin failed: password: %!&*#@^$"
	got := tool.SanitizeString(in)
	if strings.Contains(got, "%!&*#@^$") {
		t.Errorf("SanitizeString(%q) = %q: the password reaches the model (it was redacted before the change)", in, got)
	}
}

// Regression (found in review, eighteenth session): "token" and "secret" are now redacted before a colon whatever precedes
// them, with only a short list of sentence words (and EOF, punctuation)
// spared. A parser's "unexpected token: <identifier>" loses the very word
// the model has to fix in its own argument, and a secret store's
// "secret: permission denied" reads "secret: [redacted] denied".
func TestOrdinaryWordsAfterTokenOrSecretAreKept(t *testing.T) {
	for _, tc := range []struct{ text, keep string }{
		{"parse filter: unexpected token: status at offset 14", "unexpected token: status"},
		{"syntax error: unexpected token: SELEKT near line 1", "unexpected token: SELEKT"},
		{"read orders-api secret: permission denied", "permission denied"},
	} {
		m := tool.Sanitize(tool.Error("invalid_input", false, tc.text))
		if got := fmt.Sprint(m["hint"]); !strings.Contains(got, tc.keep) {
			t.Errorf("Sanitize hint %q = %q: the words %q the model needs were redacted", tc.text, got, tc.keep)
		}
	}
}
