package client

import (
	"context"
	"fmt"
)

// CheckRequestsStream asks the server for the requests stream: nil when it
// exists, an error matching jetstream.ErrStreamNotFound when the server
// says it does not (the fleet never created its streams, or a wrong
// RequestsStream), any other error when the server did not answer (an
// outage, no JetStream responders yet after a restart). A publish that got
// no PubAck is told apart with it: sending again helps in an outage, never
// when the stream is missing.
func (c *Client) CheckRequestsStream(ctx context.Context) error {
	if _, err := c.js.Stream(ctx, c.cfg.RequestsStream); err != nil {
		return fmt.Errorf("client: requests stream %s: %w", c.cfg.RequestsStream, err)
	}
	return nil
}
