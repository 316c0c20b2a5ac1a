package client

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Client submits requests and awaits results. It is safe for concurrent use.
type Client struct {
	js  jetstream.JetStream
	nc  *nats.Conn
	cfg Config

	mu      sync.Mutex       // mu guards results; never held across a network call
	results jetstream.Stream // results is the cached AGENT_RESULTS handle (resultsStream)

	// waitingHook, when set (tests), is called when Await has subscribed,
	// found no stored result and starts waiting for a live one.
	waitingHook func(invocationID string)
}

// New returns a Client on js and nc (normally js's own connection; nil nc
// means js.Conn()). The streams must exist (internal/streams.Ensure). cfg
// gets its defaults; one that fails Validate is refused (ErrInvalidConfig).
func New(js jetstream.JetStream, nc *nats.Conn, cfg Config) (*Client, error) {
	if js == nil {
		return nil, errors.New("client: nil JetStream")
	}
	if nc == nil {
		nc = js.Conn()
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Client{js: js, nc: nc, cfg: cfg}, nil
}

// Config returns the client's configuration (defaults applied).
func (c *Client) Config() Config { return c.cfg }

// resultsStream returns the cached AGENT_RESULTS handle, fetching it
// (js.Stream, a request to the server) when there is none yet. The lock is
// not held during the fetch: a fetch lost in a server restart must not hold
// up the other callers, whose own look-ups are bounded (LookupLimit) or
// follow their own contexts. Callers that find no handle fetch it each;
// the first to succeed stores it.
func (c *Client) resultsStream(ctx context.Context) (jetstream.Stream, error) {
	c.mu.Lock()
	s := c.results
	c.mu.Unlock()
	if s != nil {
		return s, nil
	}
	s, err := c.js.Stream(ctx, c.cfg.ResultsStream)
	if err != nil {
		return nil, fmt.Errorf("client: results stream %s: %w", c.cfg.ResultsStream, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.results == nil {
		c.results = s
	}
	return c.results, nil
}
