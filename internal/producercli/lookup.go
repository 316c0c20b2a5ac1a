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

// ErrLookupUnanswered reports that a result look-up made before submitting
// (a batch line's, send --wait's) got no answer within the timeout, try
// after try: the server was unreachable. Nothing was submitted.
var ErrLookupUnanswered = errors.New("producer: the result look-up got no answer")

// lookup is c.LookupOnce (each try bounded by client.LookupLimit: a
// request lost in a server restart is never answered, nats.go does not
// resend it), tried again with backoff while the server does not answer
// (a lost request, no JetStream responders yet after a restart), for at
// most limit. A look-up the connection's permissions refuse is not tried
// again: its error names the permission violation (it matches
// nats.ErrPermissionViolation), and no try would be answered (found in
// review, twenty-fourth session: each line waited out its whole --timeout
// and blamed an outage). Its
// error never matches context.DeadlineExceeded unless ctx itself ended: a
// server that does not answer is an error, not a result that did not come
// in time.
func lookup(ctx context.Context, c *client.Client, id string, limit time.Duration) (*client.StoredResult, error) {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval, b.MaxElapsedTime = 100*time.Millisecond, time.Second, 0
	deadline := time.Now().Add(limit)
	for {
		stored, err := c.LookupOnce(ctx, id)
		if ctx.Err() != nil {
			return stored, err
		}
		// Tried again: a request lost in a restart, and no JetStream
		// responders yet. Not a closed connection: it never comes back.
		lost := errors.Is(err, client.ErrLookupLost)
		if !lost && !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, nats.ErrTimeout) {
			return stored, err
		}
		wait := b.NextBackOff()
		if time.Now().Add(wait).After(deadline) {
			if lost || errors.Is(err, context.DeadlineExceeded) {
				// A try's own deadline is not the caller's: said in words.
				return nil, fmt.Errorf("%w (no answer within %v) within %v; nothing was submitted", ErrLookupUnanswered, client.LookupLimit, limit)
			}
			return nil, fmt.Errorf("%w within %v; nothing was submitted: %w", ErrLookupUnanswered, limit, err)
		}
		if err := sleepCtx(ctx, wait); err != nil {
			return nil, err
		}
	}
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
