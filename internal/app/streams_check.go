package app

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// streamsCheckTTL is how long a streams check's answer is reused: probes
// from several orchestrators and scrapers cost the server one look-up per
// stream per TTL, not per probe.
const streamsCheckTTL = 5 * time.Second

// streamsCheck is the /readyz check that the worker's streams exist: a
// worker whose results or DLQ stream was deleted (by hand, or lost with a
// server's store) can no longer publish results or dead letters, and must
// leave service rather than take more work.
type streamsCheck struct {
	js    jetstream.JetStream
	names []string

	mu  sync.Mutex
	at  time.Time
	err error
}

func newStreamsCheck(js jetstream.JetStream, names ...string) *streamsCheck {
	return &streamsCheck{js: js, names: names}
}

// Check implements Check.
func (c *streamsCheck) Check(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < streamsCheckTTL {
		return c.err
	}
	c.err = nil
	for _, n := range c.names {
		if _, err := c.js.Stream(ctx, n); err != nil {
			c.err = fmt.Errorf("stream %s: %w", n, err)
			break
		}
	}
	c.at = time.Now()
	return c.err
}
