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

// Check implements Check. The look-ups run outside the lock, and an answer
// is reused only when it is the streams' own: a probe whose context ended
// (a prober that hung up, the shared deadline spent by another check)
// says nothing about the streams and is not kept.
func (c *streamsCheck) Check(ctx context.Context) error {
	c.mu.Lock()
	if !c.at.IsZero() && time.Since(c.at) < streamsCheckTTL {
		err := c.err
		c.mu.Unlock()
		return err
	}
	c.mu.Unlock()
	var err error
	for _, n := range c.names {
		if _, e := c.js.Stream(ctx, n); e != nil {
			err = fmt.Errorf("stream %s: %w", n, e)
			break
		}
	}
	if ctx.Err() != nil {
		return err
	}
	c.mu.Lock()
	c.at, c.err = time.Now(), err
	c.mu.Unlock()
	return err
}
