package sim

import (
	"errors"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// Regression (found in review, twenty-second session): Config() returns a copy
// of Faults, so writing to it does not change the live model.
//
// New copies cfg.Faults so the caller's map cannot change a running model,
// but Config() ("the model's effective configuration") hands that internal
// map back: writing to it changes the fault rates of the live model,
// unvalidated, and races with every call's draw (go test -race reports it
// when done concurrently).
func TestConfigDoesNotAliasFaults(t *testing.T) {
	m, err := New(Config{Faults: Faults{FaultServer: 0}})
	if err != nil {
		t.Fatal(err)
	}
	c := m.Config()
	c.Faults[FaultServer] = 1 // e.g. a demo that prints then tweaks a copy

	req := &model.Request{Contents: []*model.Content{user("refund A-1042")}}
	for r, err := range m.GenerateContent(t.Context(), req, false) {
		if errors.Is(err, ErrSimulated) {
			t.Fatalf("a write to Config().Faults changed the live model: call failed with %v", err)
		}
		_ = r
	}
	if got := m.Config().Faults[FaultServer]; got != 0 {
		t.Fatalf("Config().Faults[server] = %v after editing a returned copy, want 0", got)
	}
}
