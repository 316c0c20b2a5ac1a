package app_test

import (
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/config"
)

// config.Embedded.Port 0 means 4223 (config.DefaultEmbeddedPort), so that
// producer and replayer commands on the same machine reach the embedded
// server at nats://127.0.0.1:4223, never nats-server's own default 4222:
// the port of the machine's real NATS (DESIGN.md).
func TestEmbeddedPortZeroMeans4223(t *testing.T) {
	s, err := app.StartEmbedded(config.Embedded{DataDir: t.TempDir(), Port: 0}, zerolog.Nop())
	if err != nil {
		t.Fatalf("embedded.port 0 (documented: 4223): %v", err)
	}
	defer s.Close()
	if u := s.ClientURL(); !strings.HasSuffix(u, ":4223") {
		t.Errorf("embedded.port 0 (documented: 4223) listens at %s", u)
	}
}
