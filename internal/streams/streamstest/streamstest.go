// Package streamstest gives tests the fleet's streams on a real server: the
// embedded nats-server (always) and, when the environment variable NATS_URL
// is set, that server too, with stream names and subject prefixes unique to
// the test so that runs never collide; what the test created there is
// deleted when it ends.
package streamstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/streams"
)

// Target is one server with the streams ensured on it.
type Target struct {
	// Name is "embedded" or "NATS_URL".
	Name string
	// JS and NC are a JetStream context and its connection to the server.
	JS jetstream.JetStream
	NC *nats.Conn // NC is the connection to the server.
	// Cfg is the stream configuration in use (defaults applied).
	Cfg streams.Config
}

// Embedded starts an embedded server and ensures the default topology on it.
func Embedded(t testing.TB) Target {
	t.Helper()
	js, nc, _ := natstest.JetStream(t)
	cfg := streams.Config{}.WithDefaults()
	ensure(t, js, cfg)
	return Target{Name: "embedded", JS: js, NC: nc, Cfg: cfg}
}

// Targets returns Embedded(t) and, when NATS_URL is set, External(t).
func Targets(t testing.TB) []Target {
	t.Helper()
	out := []Target{Embedded(t)}
	if os.Getenv("NATS_URL") != "" {
		out = append(out, External(t))
	}
	return out
}

// External connects to $NATS_URL and ensures a topology with names and
// prefixes unique to this call, deleting its streams when t ends.
func External(t testing.TB) Target {
	t.Helper()
	url := os.Getenv("NATS_URL")
	nc, err := nats.Connect(url, nats.Name(t.Name()))
	if err != nil {
		t.Fatalf("streamstest: NATS_URL=%s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := UniqueConfig()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, s := range []string{cfg.RequestsStream, cfg.ResultsStream, cfg.DLQStream} {
			if err := js.DeleteStream(ctx, s); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
				t.Errorf("streamstest: delete %s: %v", s, err)
			}
		}
	})
	ensure(t, js, cfg)
	return Target{Name: "NATS_URL", JS: js, NC: nc, Cfg: cfg}
}

// UniqueConfig returns a configuration whose stream names and subject
// prefixes carry a random suffix (defaults applied).
func UniqueConfig() streams.Config {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	sfx := hex.EncodeToString(b)
	return streams.Config{
		RequestsStream: "T_REQ_" + sfx, ResultsStream: "T_RES_" + sfx, DLQStream: "T_DLQ_" + sfx,
		RequestPrefix: "t" + sfx + ".requests", ResultPrefix: "t" + sfx + ".results", DLQPrefix: "t" + sfx + ".dlq",
	}.WithDefaults()
}

func ensure(t testing.TB, js jetstream.JetStream, cfg streams.Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := streams.Ensure(ctx, js, cfg); err != nil {
		t.Fatalf("streamstest: ensure: %v", err)
	}
}

// WaitDrained waits until tg's requests stream (a work queue) is empty:
// every request acked. Workers ack after their result's PubAck, so every
// result is then stored (a subscriber can see it live before that). It
// fails t when ctx ends first.
func WaitDrained(ctx context.Context, t testing.TB, tg Target) {
	t.Helper()
	s, err := tg.JS.Stream(ctx, tg.Cfg.RequestsStream)
	if err != nil {
		t.Fatal(err)
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatalf("requests stream: %v", err)
		}
		if info.State.Msgs == 0 {
			return
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("%d requests still not acked: %v", info.State.Msgs, ctx.Err())
		}
	}
}
