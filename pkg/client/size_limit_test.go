package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// The server's max_payload counts the headers Send adds (Nats-Msg-Id,
// Nats-Expected-Stream). A request whose body is within MaxRequestSize but
// which does not fit with its headers is refused before the publish as an
// *envelope.InvalidError (the producer's exit 2, a batch's "invalid"); one
// that fits with its headers to the byte is published. (The body alone was
// compared: such a request passed every check, then failed the publish
// with nats.ErrMaxPayload, a plain error.) On a server whose max_payload
// leaves a dead letter room (more than 9 KiB) the worker's limit
// (dlq.MaxWholeRequest) is lower than that and refuses first
// (TestSendRefusesARequestLargerThanTheWorkerTakesOnASmallMaxPayload), so
// the headers' edge is tested on one with a max_payload of 8 KiB, where
// the worker takes its own limit.
func TestSendRefusesARequestTooLargeWithItsHeaders(t *testing.T) {
	c, nc := payloadServer(t, 8<<10)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	limit := int(nc.MaxPayload())

	// 16 bytes under the body limit: over max_payload with its headers.
	_, err := c.Send(ctx, sizedRequest(t, "inv-size-edge", limit-16))
	var ie *envelope.InvalidError
	if !errors.As(err, &ie) || !strings.Contains(ie.Reason, "with its headers") {
		t.Fatalf("Send of a request %d bytes under the limit = %v; want an *envelope.InvalidError about its headers", 16, err)
	}
	// Its headers are 10 + (13 + 2 + id) + (22 + 2 + stream) + 2 bytes: a
	// body that fills the rest is published.
	id := "inv-size-fits"
	headers := 10 + 15 + len(id) + 24 + len(c.Config().RequestsStream) + 2
	if _, err := c.Send(ctx, sizedRequest(t, id, limit-headers)); err != nil {
		t.Fatalf("Send of a request that fits max_payload with its headers = %v", err)
	}
	// One byte more (an id of the same length) is refused.
	if _, err := c.Send(ctx, sizedRequest(t, "inv-size-over", limit-headers+1)); !errors.As(err, &ie) {
		t.Fatalf("Send of a request one byte over max_payload with its headers = %v; want an *envelope.InvalidError", err)
	}
}
