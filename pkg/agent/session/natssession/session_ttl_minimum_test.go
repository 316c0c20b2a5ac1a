package natssession_test

import (
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/pkg/agent/session/natssession"
)

// Regression (found in review, twenty-third session): Config.Validate
// passed a SessionTTL between 0 and 100ms, which every NewService then
// failed on with JetStream's "max age needs to be >= 100ms".
//
// Config.Validate "reports a configuration that cannot work". A SessionTTL
// below JetStream's minimum max age (100ms) cannot work: NewService fails on
// it with the server's API error. Validate checks InvocationRetention
// against that minimum, but not SessionTTL, so it passes a config that
// every NewService refuses.
func TestSessionTTLBelowServerMinimumIsRefusedByValidate(t *testing.T) {
	if err := (natssession.Config{SessionTTL: 100 * time.Millisecond}.WithDefaults()).Validate(); err != nil {
		t.Fatalf("Config{SessionTTL: 100ms}.Validate() = %v, want nil (JetStream's minimum)", err)
	}
	cfg := natssession.Config{SessionTTL: 50 * time.Millisecond}.WithDefaults()
	verr := cfg.Validate()
	if verr != nil {
		return // refused up front, as wanted
	}
	js, _, _ := natstest.JetStream(t)
	_, err := natssession.NewService(ctx, js, cfg)
	if err != nil {
		t.Fatalf("Config{SessionTTL: 50ms}.Validate() = nil, but NewService refuses it: %v", err)
	}
}
