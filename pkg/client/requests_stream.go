package client

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// ErrNotStored is matched by CheckRequestSubject's error when the server
// says a request to the agent cannot be stored in the requests stream: no
// stream stores its subject (the fleet's streams are missing, or
// RequestPrefix is not the fleet's; it matches jetstream.ErrStreamNotFound
// too), another stream does, or the connection may not publish to it.
// Sending the request again cannot help.
var ErrNotStored = errors.New("client: the request cannot be stored")

// CheckRequestSubject asks the server which stream stores agent's request
// subject (<RequestPrefix>.<agent>): nil when it is the requests stream, an
// error matching ErrNotStored when the server says the request cannot be
// stored there (see ErrNotStored), any other error when the server did not
// answer (an outage, no JetStream responders yet after a restart). A
// publish that got no PubAck is told apart with it: sending again helps in
// an outage, never when the request cannot be stored.
func (c *Client) CheckRequestSubject(ctx context.Context, agent string) error {
	subject := envelope.RequestSubject(c.cfg.RequestPrefix, agent)
	// A publish the connection's permissions refuse gets no PubAck; the
	// server says so asynchronously, and the connection keeps it.
	if le := c.nc.LastError(); errors.Is(le, nats.ErrPermissionViolation) && strings.Contains(le.Error(), `"`+subject+`"`) {
		return fmt.Errorf("%w: %s: %w", ErrNotStored, subject, le)
	}
	name, err := c.js.StreamNameBySubject(ctx, subject)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return fmt.Errorf("%w: no stream stores %s (is %s missing, or the request prefix not the fleet's?): %w",
			ErrNotStored, subject, c.cfg.RequestsStream, err)
	case err != nil:
		return fmt.Errorf("client: which stream stores %s: %w", subject, err)
	case name != c.cfg.RequestsStream:
		return fmt.Errorf("%w: %s is stored by stream %s, not %s", ErrNotStored, subject, name, c.cfg.RequestsStream)
	}
	return nil
}
