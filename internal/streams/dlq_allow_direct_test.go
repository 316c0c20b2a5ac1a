package streams_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
)

// The DLQ stream allows direct gets (a stream message get answers with an
// entry base64 in JSON, a third larger than the max payload allows a
// reader on a server whose max_pending is its max_payload). Ensure turns
// them on for a DLQ stream an earlier version made without them, and a
// process of that version turning them off again at its start (its
// configuration has none) is not refused, nor is the next Ensure. Runs on
// $NATS_URL too (NATS 2.9, where direct gets appeared).
func TestEnsureAllowsDirectGetsOnAnExistingDLQ(t *testing.T) {
	type target struct {
		name string
		js   jetstream.JetStream
	}
	js, _, _ := natstest.JetStream(t)
	targets := []target{{"embedded", js}}
	if url := os.Getenv("NATS_URL"); url != "" {
		nc, err := nats.Connect(url, nats.Name(t.Name()))
		if err != nil {
			t.Fatalf("NATS_URL=%s: %v", url, err)
		}
		t.Cleanup(nc.Close)
		ejs, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, target{"NATS_URL", ejs})
	}
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cfg := streamstest.UniqueConfig()
			t.Cleanup(func() {
				dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer dcancel()
				for _, s := range []string{cfg.RequestsStream, cfg.ResultsStream, cfg.DLQStream} {
					if err := tg.js.DeleteStream(dctx, s); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
						t.Errorf("delete %s: %v", s, err)
					}
				}
			})
			old := cfg.DLQStreamConfig()
			old.AllowDirect = false // as an earlier version made it
			if _, err := tg.js.CreateStream(ctx, old); err != nil {
				t.Fatal(err)
			}
			allowDirect := func(when string, want bool) {
				t.Helper()
				s, err := tg.js.Stream(ctx, cfg.DLQStream)
				if err != nil {
					t.Fatal(err)
				}
				if got := s.CachedInfo().Config.AllowDirect; got != want {
					t.Fatalf("%s: AllowDirect %v, want %v", when, got, want)
				}
			}
			if _, err := streams.Ensure(ctx, tg.js, cfg); err != nil {
				t.Fatalf("ensure on a DLQ stream without direct gets: %v", err)
			}
			allowDirect("after Ensure", true)
			if _, err := tg.js.UpdateStream(ctx, old); err != nil {
				t.Fatalf("an earlier version's update (direct gets off) is refused: %v", err)
			}
			allowDirect("after an earlier version's update", false)
			if _, err := streams.Ensure(ctx, tg.js, cfg); err != nil {
				t.Fatalf("ensure after an earlier version's update: %v", err)
			}
			allowDirect("after Ensure again", true)
		})
	}
}
