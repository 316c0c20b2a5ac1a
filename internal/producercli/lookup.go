package producercli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"

	"github.com/agentfleet/agentfleet/pkg/client"
)

// lookupTry bounds one result look-up before a submission (a batch line's,
// send --wait's): a request lost in a server restart is never answered
// (nats.go does not resend it), and waiting for it would report a request
// that was never submitted as a timeout.
const lookupTry = 2 * time.Second

// ErrLookupUnanswered reports that a result look-up made before submitting
// (a batch line's, send --wait's) got no answer within the timeout, try
// after try: the server was unreachable. Nothing was submitted.
var ErrLookupUnanswered = errors.New("producer: the result look-up got no answer")

// lookup is c.Lookup, each try bounded by lookupTry and tried again, with
// backoff, while the server does not answer (a lost request, no JetStream
// responders yet after a restart), for at most limit. Its error never
// matches context.DeadlineExceeded unless ctx itself ended: a server that
// does not answer is an error, not a result that did not come in time.
func lookup(ctx context.Context, c *client.Client, id string, limit time.Duration) (*client.StoredResult, error) {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval, b.MaxElapsedTime = 100*time.Millisecond, time.Second, 0
	deadline := time.Now().Add(limit)
	for {
		lctx, cancel := context.WithTimeout(ctx, lookupTry)
		stored, err := c.Lookup(lctx, id)
		lost := err != nil && lctx.Err() != nil
		cancel()
		if ctx.Err() != nil {
			return stored, err
		}
		// Tried again: a request lost in a restart, and no JetStream
		// responders yet. Not a closed connection: it never comes back.
		if !lost && !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, nats.ErrTimeout) {
			return stored, err
		}
		wait := b.NextBackOff()
		if time.Now().Add(wait).After(deadline) {
			if lost || errors.Is(err, context.DeadlineExceeded) {
				// A try's own deadline is not the caller's: said in words.
				return nil, fmt.Errorf("%w (%s) within %v; nothing was submitted", ErrLookupUnanswered, unwrapDeadline(err), limit)
			}
			return nil, fmt.Errorf("%w within %v; nothing was submitted: %w", ErrLookupUnanswered, limit, err)
		}
		if err := sleepCtx(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// unwrapDeadline describes err without letting it match
// context.DeadlineExceeded (a try's own deadline is not the caller's).
func unwrapDeadline(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer within " + lookupTry.String()
	}
	return err.Error()
}

// sleepCtx waits d, or until ctx ends (its error then).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
