package natssession_test

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/natssession"
	"github.com/agentfleet/agentfleet/pkg/agent/session/sessiontest"
)

// externalURLEnv names a NATS server to run the suites against as well, for
// checking compatibility with the fleet's server version (2.9 on this
// machine: NATSSESSION_SERVER_URL=nats://127.0.0.1:4222). The suites always
// run against the embedded server; this test only adds the external one.
const externalURLEnv = "NATSSESSION_SERVER_URL"

// externalConfig connects to the external server and returns a config with
// bucket names unique to t, deleting the buckets when t ends.
func externalConfig(t *testing.T, url string) (jetstream.JetStream, natssession.Config) {
	nc, err := nats.Connect(url, nats.Name(t.Name()))
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	sfx := "_test_" + hex.EncodeToString(b[:])
	cfg := natssession.Config{
		SessionBucket:    natssession.DefaultSessionBucket + sfx,
		LockBucket:       natssession.DefaultLockBucket + sfx,
		InvocationBucket: natssession.DefaultInvocationBucket + sfx,
	}
	t.Cleanup(func() {
		for _, b := range []string{cfg.SessionBucket, cfg.LockBucket, cfg.InvocationBucket} {
			_ = js.DeleteKeyValue(ctx, b)
		}
		nc.Close()
	})
	return js, cfg
}

func TestExternalServer(t *testing.T) {
	url := os.Getenv(externalURLEnv)
	if url == "" {
		t.Skipf("%s not set", externalURLEnv)
	}
	t.Run("Service", func(t *testing.T) {
		sessiontest.Run(t, sessiontest.Factory{New: func(t *testing.T) session.Service {
			js, cfg := externalConfig(t, url)
			svc, err := natssession.NewService(ctx, js, cfg)
			if err != nil {
				t.Fatal(err)
			}
			return svc
		}})
	})
	t.Run("Locker", func(t *testing.T) {
		sessiontest.RunLocker(t, sessiontest.LockerFactory{New: func(t *testing.T) session.Locker {
			js, cfg := externalConfig(t, url)
			l, err := natssession.NewLocker(ctx, js, cfg)
			if err != nil {
				t.Fatal(err)
			}
			return l
		}})
	})
	t.Run("Invocations", func(t *testing.T) {
		sessiontest.RunInvocations(t, sessiontest.InvocationFactory{New: func(t *testing.T, retention time.Duration) session.InvocationStore {
			js, cfg := externalConfig(t, url)
			cfg.InvocationRetention = retention
			s, err := natssession.NewInvocations(ctx, js, cfg)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}})
	})
}
