package app_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/redistest"
)

// Workers with other stores (NATS KV against Redis, or two redis.prefix
// values) must not consume the same requests: a request redelivered from
// one to the other runs its refund again, because the second idempotency
// store has never seen the first's key. A worker whose stores differ from
// those of the workers already on the consumer is refused at start as bad
// configuration (exit 2); one with the same stores joins.
func TestWorkerWithOtherStoresIsRefused(t *testing.T) {
	s := natstest.RunServer(t)
	start := func(name, redisURL, prefix string) (*app.Running, context.CancelFunc, error) {
		cfg := config.DefaultWorker()
		cfg.NATS.URL = s.ClientURL()
		cfg.Embedded.Enabled = false
		cfg.Redis.URL, cfg.Redis.Prefix = redisURL, prefix
		cfg.MetricsAddr = ""
		cfg.Worker.Name = name
		ctx, cancel := context.WithCancel(context.Background())
		r, err := app.StartWorker(ctx, cfg, func(string) string { return "" }, io.Discard)
		if err != nil {
			cancel()
			return nil, nil, err
		}
		t.Cleanup(func() { cancel(); _ = r.Wait() })
		return r, cancel, nil
	}
	_, prefix := redistest.Client(t)
	if _, _, err := start("w-a", redistest.URL(), prefix); err != nil {
		t.Fatal(err)
	}
	if _, _, err := start("w-b", redistest.URL(), prefix); err != nil {
		t.Fatalf("a second worker with the same stores: %v", err)
	}
	for _, other := range []struct{ name, url, prefix string }{
		{"w-other-prefix", redistest.URL(), prefix + "blue:"},
		{"w-nats-kv", "", ""},
	} {
		_, _, err := start(other.name, other.url, other.prefix)
		if !errors.Is(err, app.ErrBadConfig) {
			t.Errorf("worker %s (other stores) on the fleet's consumer: err = %v, want ErrBadConfig", other.name, err)
		}
	}
}
