package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/client"
)

// Regression (found in review, twenty-first session): a publish the requests stream
// refused in its PubAck is a *client.RefusedError carrying the *jetstream.APIError,
// not a *client.PublishError saying it may be stored.
//
// PublishError is documented for a publish that "failed or got no PubAck:
// the requests stream may or may not hold the request", and its text tells
// the user to send the request again with the same id. When the stream
// answers with a refusal (a JetStream API error in the PubAck: here a
// RequestsStream that is not the stream serving the subject, "expected
// stream does not match"; likewise a stream limit), the request is
// certainly not stored and sending it again fails the same way every time.
// Send still returns a *PublishError whose message says "may or may not be
// stored; send it again". The answer is known: it should not be reported as
// an unconfirmed publish.
func TestSendRefusedByTheStreamIsNotAnUnconfirmedPublish(t *testing.T) {
	tg := streamstest.Embedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.New(tg.JS, tg.NC, client.Config{
		RequestsStream: "NOT_THE_REQUESTS_STREAM", ResultsStream: tg.Cfg.ResultsStream,
		RequestPrefix: tg.Cfg.RequestPrefix, ResultPrefix: tg.Cfg.ResultPrefix,
	})
	if err != nil {
		t.Fatal(err)
	}
	req := request("hello")
	req.InvocationID = "inv-refused-by-stream"
	_, err = c.Send(ctx, req)
	var api *jetstream.APIError
	if !errors.As(err, &api) {
		t.Fatalf("Send = %v; want the stream's refusal (a *jetstream.APIError)", err)
	}
	var re *client.RefusedError
	if !errors.As(err, &re) || re.InvocationID != req.InvocationID {
		t.Fatalf("Send = %v; want a *client.RefusedError for %s", err, req.InvocationID)
	}
	var pe *client.PublishError
	if errors.As(err, &pe) || strings.Contains(err.Error(), "may or may not be stored") {
		t.Fatalf("Send = %q: the stream refused the request (error code %d, not stored), but the error says it may be stored and to send it again", err, api.ErrorCode)
	}
}
