package agent_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// Regression (found in review, sixteenth session): an on-model-error
// callback that records the failure in session state and escalates (the
// seed's wiring, and taxonomy.OnModelError: SetState, then nil) lost its
// write. SetState's contract: "The write is recorded as a state delta on
// the next event the loop appends", and the end's flush still appends (the
// held user message); the flush took no pending writes along.
func TestEscalatedModelErrorKeepsCallbackStateWrite(t *testing.T) {
	f := newFixture(t, agenttest.Fail(&model.ProviderError{Provider: "test", StatusCode: 401, Status: "UNAUTHENTICATED", Message: "key revoked"}))
	f.agent.Callbacks.OnModelError = append(f.agent.Callbacks.OnModelError,
		func(_ context.Context, cc *agent.CallbackContext, _ *model.Request, _ error) (*model.Response, error) {
			cc.SetState("llm_error_class", "AUTH")
			return nil, nil // escalate
		})

	_, err := f.run(t, "inv-auth", "Where is order A-1042?")
	var pe *model.ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("run: err = %v, want the provider's 401 to escalate", err)
	}
	s := f.session(t)
	if len(s.Events) == 0 {
		t.Fatalf("the held user message was not stored by the end's flush")
	}
	if got := s.State["llm_error_class"]; got != "AUTH" {
		t.Fatalf("session state llm_error_class = %v, want AUTH (the callback's write was dropped on the error path; stored events: %d, state: %v)",
			got, len(s.Events), s.State)
	}
}
