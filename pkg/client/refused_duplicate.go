package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// answerOfDuplicate decides what answers a resubmission the requests stream
// dropped as a duplicate (rec) of an invocation whose stored result was a
// BAD_INPUT refusal (before), by AwaitSent's rules: the result known now
// (the refusal, before.Result itself, or a newer one), or nil when the
// answer is the result that follows the refusal, still to come. While the
// server gives no answer to decide by (JetStream does not answer yet after
// a restart, or the result look-up's reply is lost) it asks again, with
// backoff, until ctx ends: then its error matches ctx.Err() and
// ErrUnanswered, and names the last failure, also when ctx ends inside a
// later try (found in review of this session's fix, twenty-third session:
// that try's plain ctx error was returned) or inside the first (a deadline
// shorter than a try; found in review, twenty-fifth session). No answer is never taken for
// "nothing newer" (found in review, twenty-third session: a duplicate of a
// resend that completed was answered with the stale refusal).
func (c *Client) answerOfDuplicate(ctx context.Context, rec *Receipt, before *StoredResult) (*envelope.Result, error) {
	delay := relookupFirst
	var last error // the last unanswered try's failure
	for {
		res, err := c.answerOfDuplicateOnce(ctx, rec, before)
		if lookupUnanswered(err) {
			last = err
		}
		switch {
		case err != nil && ctx.Err() != nil && (lookupUnanswered(err) || errors.Is(err, ctx.Err())):
			return nil, unansweredError(ctx, rec.InvocationID, last)
		case err == nil || !lookupUnanswered(err):
			return res, err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, unansweredError(ctx, rec.InvocationID, last)
		case <-t.C:
		}
		delay = min(2*delay, duplicateRetryMax)
	}
}

// duplicateRetryMax is the longest wait between answerOfDuplicate's tries.
const duplicateRetryMax = time.Second

// answerOfDuplicateOnce is one try of answerOfDuplicate: its error matches
// lookupUnanswered when the server gave no answer to decide by.
func (c *Client) answerOfDuplicateOnce(ctx context.Context, rec *Receipt, before *StoredResult) (*envelope.Result, error) {
	// Both reads of the requests stream are bounded and optional: a
	// producer may lack STREAM.INFO or MSG.GET on it, and a read lost in a
	// server restart is never answered. Without them the "gone" rule below
	// decides, as it does for a request already removed (found in review,
	// twenty-first session: a producer without the permissions waited out
	// its whole context). No responders is not that: JetStream does not
	// answer yet (a permission violation is never answered), so
	// answerOfDuplicate asks again.
	lctx, cancel := context.WithTimeout(ctx, LookupLimit)
	defer cancel()
	s, err := c.js.Stream(lctx, c.cfg.RequestsStream)
	if errors.Is(err, nats.ErrNoResponders) {
		return nil, fmt.Errorf("client: requests stream %s: %w", c.cfg.RequestsStream, err)
	}
	if err == nil {
		// Fetched, not cached: its info carries the duplicate window and,
		// from nats-server 2.10, the server's time now (a 2.9 server sends
		// none: the local clock then).
		info := s.CachedInfo()
		now := info.TimeStamp
		if now.IsZero() {
			now = time.Now()
		}
		// The server keeps an id a little past its window (its purge timer
		// fires at most every 50 ms, and clocks differ): only a refusal
		// older than the window and a slack is surely out of it.
		if window := info.Config.Duplicates; window > 0 && before.Time.Before(now.Add(-window-duplicateSlack)) {
			return nil, nil // the duplicated request is younger than the window, so younger than the refusal
		}
		msg, err := s.GetMsg(lctx, rec.Sequence)
		switch {
		case err == nil && msg.Time.After(before.Time):
			return nil, nil // a resend stored after the refusal, not answered yet
		case err == nil:
			return before.Result, nil // the refused request, being removed
		case errors.Is(err, nats.ErrNoResponders):
			return nil, fmt.Errorf("client: requests stream %s: message %d: %w", c.cfg.RequestsStream, rec.Sequence, err)
		}
		// Gone (or not readable): the rule below.
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	// Gone: answered, and its answer stored before it was removed. A newer
	// BAD_INPUT refusal is the refusal again (a redelivered request
	// refused twice, or a later resend refused as well): the duplicate was
	// dropped all the same, and the stored refusal answers it (seen in a
	// CI run, twenty-first session: the second refusal was taken for the
	// resend's own answer).
	// A look-up with no answer (lost, or no JetStream responders yet) says
	// nothing of what is stored: its error (answerOfDuplicate asks again).
	// A result at a lower sequence is newer only in a results stream
	// recreated since (storedAfter asks its leader): else an older one
	// that a replica or a mirror behind the leader answered with.
	stored, err := c.LookupOnce(ctx, rec.InvocationID)
	newer := false
	if err == nil && !stored.RefusedAsBadInput() {
		newer, err = c.storedAfter(ctx, rec.InvocationID, stored, before.Seq, before.Time, false)
	}
	switch {
	case newer:
		return stored.Result, nil
	case err != nil && !errors.Is(err, ErrNoResult):
		return nil, err
	}
	return before.Result, nil
}

// duplicateSlack is how long past its duplicate window answerOfDuplicate
// still takes a refused request's id to be in it.
const duplicateSlack = time.Second
