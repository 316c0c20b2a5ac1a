package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// answerOfDuplicate decides what answers a resubmission the requests stream
// dropped as a duplicate (rec) of an invocation whose stored result was a
// BAD_INPUT refusal (before), by AwaitSent's rules: the result known now
// (the refusal, before.Result itself, or a newer one), or nil when the
// answer is the result that follows the refusal, still to come.
func (c *Client) answerOfDuplicate(ctx context.Context, rec *Receipt, before *StoredResult) (*envelope.Result, error) {
	// Fetched, not cached: its info carries the server's time now and the
	// duplicate window.
	s, err := c.js.Stream(ctx, c.cfg.RequestsStream)
	if err != nil {
		return nil, fmt.Errorf("client: await %s: requests stream %s: %w", rec.InvocationID, c.cfg.RequestsStream, err)
	}
	info := s.CachedInfo()
	if window := info.Config.Duplicates; window > 0 && before.Time.Before(info.TimeStamp.Add(-window)) {
		return nil, nil // the duplicated request is younger than the window, so younger than the refusal
	}
	msg, err := s.GetMsg(ctx, rec.Sequence)
	switch {
	case err == nil && msg.Time.After(before.Time):
		return nil, nil // a resend stored after the refusal, not answered yet
	case err == nil:
		return before.Result, nil // the refused request, being removed
	case !errors.Is(err, jetstream.ErrMsgNotFound):
		return nil, fmt.Errorf("client: await %s: request at seq %d: %w", rec.InvocationID, rec.Sequence, err)
	}
	// Gone: answered, and its answer stored before it was removed.
	stored, err := c.Lookup(ctx, rec.InvocationID)
	switch {
	case err == nil && stored.Seq > before.Seq:
		return stored.Result, nil
	case err != nil && !errors.Is(err, ErrNoResult):
		return nil, err
	}
	return before.Result, nil
}
