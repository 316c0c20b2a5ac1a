package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// The server's max_payload (1 MiB by default) counts the headers Send adds (Nats-Msg-Id, Nats-Expected-Stream). A
// request whose body is within MaxRequestSize but which does not fit with
// its headers is refused before the publish as an *envelope.InvalidError
// (the producer's exit 2, a batch's "invalid"); one that fits with its
// headers to the byte is published. (The body alone was compared: such a
// request passed every check, then failed the publish with
// nats.ErrMaxPayload, a plain error.)
func TestSendRefusesARequestTooLargeWithItsHeaders(t *testing.T) {
	tg := streamstest.Embedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The default body limit leaves room under the default max_payload
	// (envelope.DefaultMaxSize is 1 MiB less 16 KiB): a client whose limit
	// is above the server's, as a fleet whose servers take less than it.
	c, err := client.New(tg.JS, tg.NC, client.Config{
		RequestsStream: tg.Cfg.RequestsStream, ResultsStream: tg.Cfg.ResultsStream,
		RequestPrefix: tg.Cfg.RequestPrefix, ResultPrefix: tg.Cfg.ResultPrefix,
		MaxRequestSize: 2 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	limit := int(tg.NC.MaxPayload())
	sized := func(id string, size int) *envelope.Request {
		t.Helper()
		req := request("x")
		req.InvocationID, req.V = id, envelope.Version
		base, err := req.Encode()
		if err != nil {
			t.Fatal(err)
		}
		req.Message.Parts[0].Text = strings.Repeat("x", size-len(base)+1)
		if data, err := req.Encode(); err != nil || len(data) != size {
			t.Fatalf("test setup: %d bytes, want %d (%v)", len(data), size, err)
		}
		return req
	}

	// 16 bytes under the body limit: over max_payload with its headers.
	_, err = c.Send(ctx, sized("inv-size-edge", limit-16))
	var ie *envelope.InvalidError
	if !errors.As(err, &ie) || !strings.Contains(ie.Reason, "with its headers") {
		t.Fatalf("Send of a request %d bytes under the limit = %v; want an *envelope.InvalidError about its headers", 16, err)
	}
	// Its headers are 10 + (13 + 2 + id) + (22 + 2 + stream) + 2 bytes: a
	// body that fills the rest is published.
	id := "inv-size-fits"
	headers := 10 + 15 + len(id) + 24 + len(tg.Cfg.RequestsStream) + 2
	if _, err := c.Send(ctx, sized(id, limit-headers)); err != nil {
		t.Fatalf("Send of a request that fits max_payload with its headers = %v", err)
	}
	// One byte more (an id of the same length) is refused.
	if _, err := c.Send(ctx, sized("inv-size-over", limit-headers+1)); !errors.As(err, &ie) {
		t.Fatalf("Send of a request one byte over max_payload with its headers = %v; want an *envelope.InvalidError", err)
	}
}
