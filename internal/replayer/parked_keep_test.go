package replayer

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/natstest"
)

// TestParkedEnsureKeepsWhatTheStreamHas: parked entries wait for a person,
// so a replayer run with a shorter parked_max_age, or on the default one
// replica, must neither drop them early nor scale the stream down (a real
// three-node cluster, so R3 exists).
func TestParkedEnsureKeepsWhatTheStreamHas(t *testing.T) {
	js, _ := natstest.ClusterJetStream(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	live := func() jetstream.StreamConfig {
		t.Helper()
		s, err := js.Stream(ctx, "AGENT_DLQ_PARKED")
		if err != nil {
			t.Fatal(err)
		}
		return s.CachedInfo().Config
	}
	team := &Parked{js: js, cfg: ParkedConfig{Stream: "AGENT_DLQ_PARKED", Prefix: "agent.parked", MaxAge: 30 * day, Replicas: 3}}
	natstest.Retry(t, time.Minute, team.Ensure)
	defaults := &Parked{js: js, cfg: ParkedConfig{Stream: "AGENT_DLQ_PARKED", Prefix: "agent.parked", MaxAge: 14 * day, Replicas: 1}}
	natstest.Retry(t, time.Minute, defaults.Ensure)
	if c := live(); c.MaxAge != 30*day || c.Replicas != 3 {
		t.Errorf("after a replayer on the defaults: max age %v, %d replicas; want 720h0m0s and 3 kept", c.MaxAge, c.Replicas)
	}
	longer := &Parked{js: js, cfg: ParkedConfig{Stream: "AGENT_DLQ_PARKED", Prefix: "agent.parked", MaxAge: 60 * day, Replicas: 1}}
	natstest.Retry(t, time.Minute, longer.Ensure)
	if c := live(); c.MaxAge != 60*day || c.Replicas != 3 {
		t.Errorf("after a longer replayer: max age %v, %d replicas; want 1440h0m0s (raised) and 3", c.MaxAge, c.Replicas)
	}
}
