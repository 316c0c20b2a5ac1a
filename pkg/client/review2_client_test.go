package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// TestReview2SendWithinSizeLimitIsPublishable: Send promises that a request
// whose encoded size is within MaxRequestSize (default
// envelope.DefaultMaxSize, 1 MiB, what the worker accepts) is published,
// and that a request it cannot send for its size is an
// *envelope.InvalidError (the producer CLI's exit 2, a batch's "invalid").
// The limit is compared with the body alone, but the server's max_payload
// (1 MiB by default, on 2.9 too) counts the headers Send adds
// (Nats-Msg-Id, Nats-Expected-Stream): a request a few dozen bytes under
// the limit passes every check and then fails the publish with
// nats.ErrMaxPayload, a plain error (CLI exit 1, batch outcome "error",
// the whole batch exiting 1).
func TestReview2SendWithinSizeLimitIsPublishable(t *testing.T) {
	tg := streamstest.Embedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := newClient(t, tg)

	req := request("x")
	req.InvocationID = "inv-size-edge"
	req.V = envelope.Version
	base, err := req.Encode()
	if err != nil {
		t.Fatal(err)
	}
	// 16 bytes under the limit.
	req.Message.Parts[0].Text = strings.Repeat("x", envelope.DefaultMaxSize-16-len(base)+1)
	data, err := req.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > c.Config().MaxRequestSize {
		t.Fatalf("test setup: %d bytes is over the limit %d", len(data), c.Config().MaxRequestSize)
	}
	if _, err := envelope.DecodeRequest(data, 0); err != nil {
		t.Fatalf("test setup: the worker would refuse it: %v", err)
	}
	_, err = c.Send(ctx, req)
	var ie *envelope.InvalidError
	if err != nil && !errors.As(err, &ie) {
		t.Fatalf("Send of a %d-byte request (limit %d) = %v: neither published nor refused as invalid", len(data), c.Config().MaxRequestSize, err)
	}
}
