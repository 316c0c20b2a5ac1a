package streams_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/streams"
)

// Regression (found in review, sixteenth session): A fleet keeps its results 72h; one process started on the defaults (24h)
// must not shorten the live AGENT_RESULTS stream: every result between the
// two ages would be deleted at once, and a producer awaiting one of them
// (GetLastMsgForSubject, DESIGN.md) would never see it. Ensure protects the
// DLQ's max age this way, but not the results'.
func TestEnsureNeverShortensResultsMaxAge(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	fleet := streams.Config{ResultsMaxAge: 72 * time.Hour}
	if _, err := streams.Ensure(ctx, js, fleet); err != nil {
		t.Fatal(err)
	}
	cfg := streams.Config{}.WithDefaults() // a process on the defaults: 24h
	if _, err := streams.Ensure(ctx, js, cfg); err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, cfg.ResultsStream)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.CachedInfo().Config.MaxAge; got != 72*time.Hour {
		t.Fatalf("results stream MaxAge = %v after a process on the defaults started, want the fleet's 72h kept (results between the two ages are deleted)", got)
	}
}
