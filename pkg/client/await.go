package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// StoredResult is a result as stored in AGENT_RESULTS.
type StoredResult struct {
	*envelope.Result
	// Seq is the result's stream sequence: AwaitAfter(Seq) waits for a
	// newer one.
	Seq uint64
	// Time is when the server stored it.
	Time time.Time
}

// Lookup returns the stored result of invocationID, or an error matching
// ErrNoResult when there is none. It does not wait.
func (c *Client) Lookup(ctx context.Context, invocationID string) (*StoredResult, error) {
	if !envelope.ValidID(invocationID) {
		return nil, fmt.Errorf("%w: %q", ErrInvalidInvocationID, invocationID)
	}
	s, err := c.resultsStream(ctx)
	if err != nil {
		return nil, err
	}
	raw, err := s.GetLastMsgForSubject(ctx, envelope.ResultSubject(c.cfg.ResultPrefix, invocationID))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, fmt.Errorf("client: result of %s: %w", invocationID, ErrNoResult)
	}
	if err != nil {
		return nil, fmt.Errorf("client: result of %s: %w", invocationID, err)
	}
	res, err := decode(invocationID, raw.Data)
	if err != nil {
		return nil, err
	}
	return &StoredResult{Result: res, Seq: raw.Sequence, Time: raw.Time}, nil
}

// Await returns the result of invocationID: the stored one if the invocation
// already finished, else the next one published. It waits until ctx ends
// (then the error matches ctx.Err()). Any status is a result: a
// dead_lettered result means the request is parked in the DLQ and may
// complete after a replay (Await again, or AwaitAfter its sequence).
func (c *Client) Await(ctx context.Context, invocationID string) (*envelope.Result, error) {
	return c.AwaitAfter(ctx, invocationID, 0)
}

// AwaitAfter is Await ignoring a stored result whose stream sequence is
// afterSeq or lower: it returns the first result published after the one a
// Lookup returned (for a resubmission).
func (c *Client) AwaitAfter(ctx context.Context, invocationID string, afterSeq uint64) (*envelope.Result, error) {
	if !envelope.ValidID(invocationID) {
		return nil, fmt.Errorf("%w: %q", ErrInvalidInvocationID, invocationID)
	}
	subject := envelope.ResultSubject(c.cfg.ResultPrefix, invocationID)
	// Subscribe first, and make sure the server has the subscription before
	// looking at the stream: a result stored after the look-up is then
	// delivered to the subscription.
	sub, err := c.nc.SubscribeSync(subject)
	if err != nil {
		return nil, fmt.Errorf("client: await %s: subscribe: %w", invocationID, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := c.flush(ctx); err != nil {
		return nil, fmt.Errorf("client: await %s: %w", invocationID, err)
	}
	stored, err := c.Lookup(ctx, invocationID)
	switch {
	case err == nil && stored.Seq > afterSeq:
		return stored.Result, nil
	case err != nil && !errors.Is(err, ErrNoResult):
		return nil, err
	}
	if c.waitingHook != nil {
		c.waitingHook(invocationID)
	}
	msg, err := sub.NextMsgWithContext(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("client: await %s: %w", invocationID, ctx.Err())
		}
		return nil, fmt.Errorf("client: await %s: %w", invocationID, err)
	}
	return decode(invocationID, msg.Data)
}

// flushTimeout bounds the flush when ctx has no deadline (nats.go needs
// one).
const flushTimeout = 10 * time.Second

// flush waits for the server to process everything sent so far.
func (c *Client) flush(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, flushTimeout)
		defer cancel()
	}
	return c.nc.FlushWithContext(ctx)
}

func decode(invocationID string, data []byte) (*envelope.Result, error) {
	res, err := envelope.DecodeResult(data)
	if err != nil {
		return nil, fmt.Errorf("client: result of %s: %w: %w", invocationID, ErrBadResult, err)
	}
	return res, nil
}
