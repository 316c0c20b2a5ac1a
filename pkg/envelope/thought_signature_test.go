package envelope_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review, nineteenth session): a request's message is
// "the user's message; text parts only" (Request's doc, DESIGN.md: message
// {role, parts[]}), and Validate refuses function calls and responses in it. But the message decodes into model.Content,
// whose Part gained ThoughtSignature (JSON thought_signature, fifteenth
// session): Gemini's opaque token of its own reasoning, which the Gemini
// adapter sends back to the provider unchanged. DecodeRequest accepts a
// user part carrying one, so any producer (or a hostile or buggy one) can
// put forged provider state into the user's turn: it is stored with the
// session's events and sent to the model with every later turn of that
// session (a signature the provider refuses turns every later invocation
// of the session into a 400, BAD_REQUEST, paged and dead-lettered).
// Correct: a request whose message parts carry anything but text is
// refused as invalid (or the field is dropped), as for function calls.
func TestDecodeRequestRefusesAThoughtSignatureInTheUserMessage(t *testing.T) {
	in := strings.Replace(good, `{"text":"refund A-1042"}`, `{"text":"refund A-1042","thought_signature":"Zm9yZ2Vk"}`, 1)
	if in == good {
		t.Fatal("setup: the text part was not found")
	}
	r, err := envelope.DecodeRequest([]byte(in), 0)
	var ie *envelope.InvalidError
	if errors.As(err, &ie) {
		return // refused: fine
	}
	if err != nil {
		t.Fatalf("DecodeRequest = %v, want *InvalidError or an accepted text-only request", err)
	}
	for i, p := range r.Message.Parts {
		if len(p.ThoughtSignature) > 0 {
			t.Fatalf("DecodeRequest accepted a user message whose part %d carries a thought_signature (%q): provider state from a producer reaches the session and the model", i, p.ThoughtSignature)
		}
	}
}
