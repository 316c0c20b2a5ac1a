package producercli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/time/rate"

	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// publishTry bounds one try of a batch line's publish: a PubAck lost in a
// server restart never comes (nats.go does not resend the request), and
// waiting for it would hold the line until the JetStream client's own
// timeout, then fail it.
const publishTry = 5 * time.Second

// streamCheckTry bounds the check of the requests stream after a failed
// try.
const streamCheckTry = 2 * time.Second

// publish is c.Send for a batch line, tried again with jittered backoff
// while a NATS outage explains the failure (no PubAck within publishTry,
// no JetStream responders yet, the connection reconnecting), for at most
// limit. Sending again is safe: the requests stream's duplicate window
// (Nats-Msg-Id is the invocation id) drops a second copy of a request
// whose PubAck was lost, and the worker answers a copy that came after the
// window from the invocation's record. Each resend waits for the batch's
// rate limiter, as a first send does. publish stops at once when the server
// says the request cannot be stored (client.ErrNotStored: the requests
// stream is missing, no stream stores the request's subject, the
// connection may not publish to it): no resend helps. Its error is the
// last try's *client.PublishError (errors.As), or ctx's when ctx ended.
func publish(ctx context.Context, c *client.Client, req *envelope.Request, limiter *rate.Limiter, limit time.Duration) (*client.Receipt, error) {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval, b.MaxElapsedTime = 250*time.Millisecond, 5*time.Second, 0
	deadline := time.Now().Add(limit)
	for tries := 1; ; tries++ {
		r := *req // Send may set fields; each try sends the parsed line
		tctx, cancel := context.WithTimeout(ctx, publishTry)
		rec, err := c.Send(tctx, &r)
		cancel()
		if err == nil || ctx.Err() != nil || !outageLike(err) {
			return rec, err
		}
		if why := notStored(ctx, c, req.Agent); why != nil {
			return nil, fmt.Errorf("%w (%w: not sent again)", err, why)
		}
		wait := b.NextBackOff()
		if time.Now().Add(wait).After(deadline) {
			return nil, fmt.Errorf("%w (%d tries in %v)", err, tries, limit)
		}
		if err := sleepCtx(ctx, wait); err != nil {
			return nil, err
		}
		// A resend is a submission too: a batch resending through an
		// outage keeps to its --rate as the server recovers (found in
		// review, twenty-first session).
		if err := limiter.Wait(ctx); err != nil {
			return nil, err
		}
	}
}

// outageLike reports whether a failed publish is one a NATS outage
// explains, so that sending again may succeed: no PubAck in time (also the
// try's own deadline), no responders, the connection reconnecting or its
// reconnect buffer full. Not a closed connection (it never comes back), a
// refusal by the stream (a wrong expected stream) or a request refused
// before it was sent.
func outageLike(err error) bool {
	if !errors.As(err, new(*client.PublishError)) {
		return false
	}
	for _, target := range []error{
		context.DeadlineExceeded, nats.ErrTimeout, nats.ErrNoResponders,
		jetstream.ErrNoStreamResponse, nats.ErrConnectionReconnecting, nats.ErrReconnectBufExceeded,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// notStored returns an error matching client.ErrNotStored when the server
// says agent's requests cannot be stored, nil otherwise (they can, or the
// server did not answer: an outage, which sending again may outlast).
func notStored(ctx context.Context, c *client.Client, agent string) error {
	cctx, cancel := context.WithTimeout(ctx, streamCheckTry)
	defer cancel()
	if err := c.CheckRequestSubject(cctx, agent); errors.Is(err, client.ErrNotStored) {
		return err
	}
	return nil
}
