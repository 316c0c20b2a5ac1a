package config_test

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/natstest"
)

// Regression (found in review, eighteenth session): Review (diffa): CheckNATSURL says it refuses only the URLs nats.go "could
// never connect with", and its test says it "accepts every form nats.go
// connects with". nats.go reads the scheme only to choose TLS or
// websocket: any other scheme (tcp://, as docker-style configurations
// write it) dials plain TCP, and an empty host dials the local machine
// (":4222"). A worker configured so connected yesterday; since today's
// change it refuses to start (exit 2, "bad configuration"): a rolling
// upgrade of such a fleet stops at the first new worker.
func TestWorkerAcceptsNATSURLsNatsGoConnectsWith(t *testing.T) {
	s := natstest.RunServer(t)
	port := strings.TrimPrefix(s.ClientURL(), "nats://127.0.0.1:")
	for _, u := range []string{"tcp://127.0.0.1:" + port, ":" + port, "nats://:" + port} {
		// nats.go connects with it ...
		nc, err := nats.Connect(u, nats.Timeout(5*time.Second))
		if err != nil {
			t.Fatalf("nats.Connect(%q): %v (the premise of this test)", u, err)
		}
		nc.Close()
		// ... and the worker must start with it.
		_, err = config.LoadWorker(nil, func(k string) (string, bool) {
			if k == "AGENTFLEET_NATS_URL" {
				return u, true
			}
			return "", false
		}, io.Discard)
		if err != nil {
			t.Errorf("nats.url %q, which nats.go connects with: the worker refuses it (exit 2): %v", u, err)
		}
	}
}
