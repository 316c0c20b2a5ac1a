package streams_test

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

// target is a server to run the Ensure tests against: the embedded one with
// the default names, and, when NATS_URL is set, that server with names and
// subjects unique to this run (deleted at the end).
type target struct {
	name string
	js   jetstream.JetStream
	cfg  streams.Config
}

func targets(t *testing.T) []target {
	t.Helper()
	js, _, _ := natstest.JetStream(t)
	out := []target{{name: "embedded", js: js}}
	url := os.Getenv("NATS_URL")
	if url == "" {
		return out
	}
	nc, err := nats.Connect(url, nats.Name(t.Name()))
	if err != nil {
		t.Fatalf("NATS_URL=%s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	ejs, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	sfx := hex.EncodeToString(b)
	cfg := streams.Config{
		RequestsStream: "T_REQ_" + sfx, ResultsStream: "T_RES_" + sfx, DLQStream: "T_DLQ_" + sfx,
		RequestPrefix: "t" + sfx + ".requests", ResultPrefix: "t" + sfx + ".results", DLQPrefix: "t" + sfx + ".dlq",
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, s := range []string{cfg.RequestsStream, cfg.ResultsStream, cfg.DLQStream} {
			if err := ejs.DeleteStream(ctx, s); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
				t.Errorf("cleanup: delete %s: %v", s, err)
			}
		}
	})
	return append(out, target{name: "NATS_URL", js: ejs, cfg: cfg})
}

func TestEnsureCreatesTopology(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cfg := tg.cfg.WithDefaults()
			if _, err := streams.Ensure(ctx, tg.js, tg.cfg); err != nil {
				t.Fatal(err)
			}
			// Idempotent.
			if _, err := streams.Ensure(ctx, tg.js, tg.cfg); err != nil {
				t.Fatalf("second Ensure: %v", err)
			}

			req := streamInfo(ctx, t, tg.js, cfg.RequestsStream)
			if req.Config.Retention != jetstream.WorkQueuePolicy || req.Config.Duplicates != 10*time.Minute {
				t.Errorf("requests stream: retention %v duplicates %v", req.Config.Retention, req.Config.Duplicates)
			}
			res := streamInfo(ctx, t, tg.js, cfg.ResultsStream)
			if res.Config.Retention != jetstream.LimitsPolicy || res.Config.MaxAge != 24*time.Hour || res.Config.MaxMsgsPerSubject != 1 {
				t.Errorf("results stream: %+v", res.Config)
			}
			dlq := streamInfo(ctx, t, tg.js, cfg.DLQStream)
			if dlq.Config.Retention != jetstream.LimitsPolicy || dlq.Config.MaxAge != 14*24*time.Hour {
				t.Errorf("dlq stream: %+v", dlq.Config)
			}
			if dlq.Config.Replicas != 1 || req.Config.Replicas != 1 || res.Config.Replicas != 1 {
				t.Error("replicas not 1")
			}

			w := consumerInfo(ctx, t, tg.js, cfg.RequestsStream, "workers")
			if w.Config.AckPolicy != jetstream.AckExplicitPolicy || w.Config.AckWait != 60*time.Second ||
				w.Config.MaxDeliver != -1 || w.Config.MaxAckPending != 64 || w.Config.Durable != "workers" {
				t.Errorf("workers consumer: %+v", w.Config)
			}
			r := consumerInfo(ctx, t, tg.js, cfg.DLQStream, "dlq-replayer")
			if r.Config.AckPolicy != jetstream.AckExplicitPolicy || r.Config.MaxDeliver != -1 || r.Config.Durable != "dlq-replayer" {
				t.Errorf("replayer consumer: %+v", r.Config)
			}
		})
	}
}

func TestEnsureUpdates(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if _, err := streams.Ensure(ctx, tg.js, tg.cfg); err != nil {
				t.Fatal(err)
			}
			cfg := tg.cfg
			cfg.WorkerMaxAckPending = 7
			cfg.WorkerAckWait = 90 * time.Second
			cfg.DLQMaxAge = 48 * time.Hour
			cfg.RequestDuplicates = 5 * time.Minute
			if _, err := streams.Ensure(ctx, tg.js, cfg); err != nil {
				t.Fatalf("update: %v", err)
			}
			cfg = cfg.WithDefaults()
			w := consumerInfo(ctx, t, tg.js, cfg.RequestsStream, cfg.WorkerConsumer)
			if w.Config.MaxAckPending != 7 || w.Config.AckWait != 90*time.Second {
				t.Errorf("consumer not updated: %+v", w.Config)
			}
			// The DLQ's max age is never shortened (that would drop the
			// dead letters between the two ages); a longer one applies.
			if got := streamInfo(ctx, t, tg.js, cfg.DLQStream).Config.MaxAge; got != 14*24*time.Hour {
				t.Errorf("DLQ MaxAge = %v after a shorter update, want 336h kept", got)
			}
			if got, err := streams.DLQMaxAge(ctx, tg.js, cfg); err != nil || got != 14*24*time.Hour {
				t.Errorf("DLQMaxAge = %v, %v", got, err)
			}
			cfg.DLQMaxAge = 30 * 24 * time.Hour
			if _, err := streams.Ensure(ctx, tg.js, cfg); err != nil {
				t.Fatalf("update: %v", err)
			}
			if got := streamInfo(ctx, t, tg.js, cfg.DLQStream).Config.MaxAge; got != 30*24*time.Hour {
				t.Errorf("DLQ MaxAge = %v after a longer update, want 720h", got)
			}
			if got := streamInfo(ctx, t, tg.js, cfg.RequestsStream).Config.Duplicates; got != 5*time.Minute {
				t.Errorf("requests duplicates = %v after update", got)
			}
		})
	}
}

// TestTopologyBehaves exercises the semantics the fleet relies on: the work
// queue removes acked requests and deduplicates by Nats-Msg-Id, results keep
// only the last message per invocation and can be read with
// GetLastMsgForSubject (direct get), and DLQ entries deduplicate.
func TestTopologyBehaves(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cfg := tg.cfg.WithDefaults()
			if _, err := streams.Ensure(ctx, tg.js, cfg); err != nil {
				t.Fatal(err)
			}
			js := tg.js

			// Requests: deduplicated, consumed, removed after ack.
			for range 2 {
				if _, err := js.Publish(ctx, cfg.RequestSubject("support"), []byte(`{}`), jetstream.WithMsgID("inv-1")); err != nil {
					t.Fatal(err)
				}
			}
			if n := streamInfo(ctx, t, js, cfg.RequestsStream).State.Msgs; n != 1 {
				t.Fatalf("requests after duplicate publish: %d messages, want 1", n)
			}
			cons, err := js.Consumer(ctx, cfg.RequestsStream, cfg.WorkerConsumer)
			if err != nil {
				t.Fatal(err)
			}
			batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			var got int
			for m := range batch.Messages() {
				got++
				md, err := m.Metadata()
				if err != nil || md.NumDelivered != 1 {
					t.Errorf("metadata %+v, %v", md, err)
				}
				if err := m.DoubleAck(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if got != 1 || batch.Error() != nil {
				t.Fatalf("fetched %d, err %v", got, batch.Error())
			}
			if n := streamInfo(ctx, t, js, cfg.RequestsStream).State.Msgs; n != 0 {
				t.Fatalf("work queue kept %d acked messages", n)
			}

			// Results: last per subject.
			for _, body := range []string{`first`, `second`} {
				if _, err := js.Publish(ctx, cfg.ResultSubject("inv-1"), []byte(body)); err != nil {
					t.Fatal(err)
				}
			}
			rs, err := js.Stream(ctx, cfg.ResultsStream)
			if err != nil {
				t.Fatal(err)
			}
			last, err := rs.GetLastMsgForSubject(ctx, cfg.ResultSubject("inv-1"))
			if err != nil || string(last.Data) != "second" {
				t.Fatalf("last result = %v, %v", last, err)
			}
			if n := streamInfo(ctx, t, js, cfg.ResultsStream).State.Msgs; n != 1 {
				t.Fatalf("results stream holds %d messages for one subject", n)
			}

			// DLQ: deduplicated by dlq-<id>-<n>.
			var acks []*jetstream.PubAck
			for range 2 {
				a, err := js.Publish(ctx, cfg.DLQSubject("SERVER", "support"), []byte(`{}`), jetstream.WithMsgID("dlq-inv-1-0"))
				if err != nil {
					t.Fatal(err)
				}
				acks = append(acks, a)
			}
			if acks[0].Duplicate || !acks[1].Duplicate || acks[0].Sequence != acks[1].Sequence {
				t.Fatalf("DLQ acks %+v %+v", acks[0], acks[1])
			}
		})
	}
}

func TestValidate(t *testing.T) {
	if err := (streams.Config{}).WithDefaults().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	bad := map[string]func(*streams.Config){
		"zero":             func(c *streams.Config) { *c = streams.Config{} },
		"dotted stream":    func(c *streams.Config) { c.DLQStream = "A.B" },
		"same streams":     func(c *streams.Config) { c.ResultsStream = c.RequestsStream },
		"wildcard prefix":  func(c *streams.Config) { c.RequestPrefix = "agent.*" },
		"empty token":      func(c *streams.Config) { c.ResultPrefix = "agent..results" },
		"overlap":          func(c *streams.Config) { c.DLQPrefix = "agent.requests.dlq" },
		"same prefix":      func(c *streams.Config) { c.DLQPrefix = c.ResultPrefix },
		"negative ackwait": func(c *streams.Config) { c.WorkerAckWait = -time.Second },
		"replicas":         func(c *streams.Config) { c.Replicas = 7 },
		"dup > age":        func(c *streams.Config) { c.DLQMaxAge = time.Minute },
		"ack pending":      func(c *streams.Config) { c.WorkerMaxAckPending = -1 },
		"consumer name":    func(c *streams.Config) { c.WorkerConsumer = "my workers" },
	}
	for name, mut := range bad {
		t.Run(name, func(t *testing.T) {
			c := streams.Config{}.WithDefaults()
			mut(&c)
			err := c.Validate()
			var ce *streams.ConfigError
			if !errors.Is(err, streams.ErrInvalidConfig) || !errors.As(err, &ce) || ce.Field == "" {
				t.Fatalf("Validate = %v, want *ConfigError", err)
			}
		})
	}
	// Ensure refuses an invalid config before touching the server.
	js, _, _ := natstest.JetStream(t)
	if _, err := streams.Ensure(context.Background(), js, streams.Config{Replicas: 9}); !errors.Is(err, streams.ErrInvalidConfig) {
		t.Fatalf("Ensure(invalid) = %v", err)
	}
}

func streamInfo(ctx context.Context, t *testing.T, js jetstream.JetStream, name string) *jetstream.StreamInfo {
	t.Helper()
	s, err := js.Stream(ctx, name)
	if err != nil {
		t.Fatalf("stream %s: %v", name, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func consumerInfo(ctx context.Context, t *testing.T, js jetstream.JetStream, stream, name string) *jetstream.ConsumerInfo {
	t.Helper()
	c, err := js.Consumer(ctx, stream, name)
	if err != nil {
		t.Fatalf("consumer %s/%s: %v", stream, name, err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// A DLQ stream that keeps entries forever (max age 0, set by hand) is kept
// so: Ensure never shortens it to the configured age.
func TestEnsureKeepsDLQWithoutMaxAge(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := streams.Config{}.WithDefaults()
	if _, err := streams.Ensure(ctx, js, cfg); err != nil {
		t.Fatal(err)
	}
	sc := streamInfo(ctx, t, js, cfg.DLQStream).Config
	sc.MaxAge = 0
	if _, err := js.UpdateStream(ctx, sc); err != nil {
		t.Fatal(err)
	}
	if _, err := streams.Ensure(ctx, js, cfg); err != nil {
		t.Fatal(err)
	}
	if got := streamInfo(ctx, t, js, cfg.DLQStream).Config.MaxAge; got != 0 {
		t.Fatalf("DLQ MaxAge = %v, want 0 (no limit) kept", got)
	}
}
