package producercli

import (
	"net"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/natstest"
)

// Regression (found in review, twentieth session): connect kept nats.go's
// default reconnect limit (60 attempts 2 s apart, about two minutes): a
// NATS restart longer than that closed the producer's connection for good,
// and every remaining line of a large batch failed as `error` (exit 1),
// although Await survives a server restart. The connection reconnects
// without limit; the first connect is still not retried, so a command
// whose server is down at the start fails at once.
func TestConnectReconnectsWithoutLimitButFailsFastAtStart(t *testing.T) {
	_, _, srv := natstest.JetStream(t)
	nc, _, err := connect(&globals{natsURL: srv.ClientURL(), timeout: DefaultTimeout})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if nc.Opts.MaxReconnect != -1 {
		t.Errorf("MaxReconnect %d, want -1 (reconnect for as long as the command runs)", nc.Opts.MaxReconnect)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "nats://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	start := time.Now()
	if nc, _, err := connect(&globals{natsURL: down, timeout: DefaultTimeout}); err == nil {
		nc.Close()
		t.Fatal("connect to a server that is down succeeded (the first connect is retried in the background): want an error at once")
	}
	if d := time.Since(start); d > connectTimeout {
		t.Fatalf("connect to a server that is down took %s, want a failure at once", d)
	}
}
