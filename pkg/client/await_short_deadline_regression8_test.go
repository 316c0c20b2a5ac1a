package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review, twenty-fifth session): Await's doc says
// that when ctx ends "the error matches ctx.Err(), and ErrUnanswered too
// when none of its look-ups was answered". With a deadline shorter than
// LookupLimit (2 s; `producer send --wait` with a short --timeout, a
// service's 1 s request budget) the deadline always fell inside the first
// look-up, and AwaitAfter returned that look-up's plain ctx error: the
// caller was told the result did not come in time, although no look-up
// was ever answered (JetStream's replies are lost here). AwaitSent of a
// duplicate (answerOfDuplicate's first try) did the same. Both now match
// ctx's error and ErrUnanswered, as with a longer deadline.
func TestAwaitWithADeadlineShorterThanALookupMatchesErrUnanswered(t *testing.T) {
	c := lostReplies(t)
	const id = "review8-short-deadline"
	before := &client.StoredResult{
		Result: &envelope.Result{InvocationID: id, Status: envelope.StatusFailed, ErrorClass: badInput, UserMessage: "rejected"},
		Seq:    3, Time: time.Now(),
	}
	for _, tc := range []struct {
		name  string
		await func(context.Context) (*envelope.Result, error)
	}{
		{"Await", func(ctx context.Context) (*envelope.Result, error) { return c.Await(ctx, id) }},
		{"AwaitAfter", func(ctx context.Context) (*envelope.Result, error) { return c.AwaitAfter(ctx, id, 3) }},
		{"AwaitSent", func(ctx context.Context) (*envelope.Result, error) {
			return c.AwaitSent(ctx, &client.Receipt{InvocationID: id, Stream: "AGENT_REQUESTS", Sequence: 7}, before)
		}},
		{"AwaitSent of a duplicate", func(ctx context.Context) (*envelope.Result, error) {
			return c.AwaitSent(ctx, &client.Receipt{InvocationID: id, Stream: "AGENT_REQUESTS", Sequence: 7, Duplicate: true}, before)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			res, err := tc.await(ctx)
			t.Logf("%s = %+v, %v", tc.name, res, err)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("premise: %s = %+v, %v; want an error matching ctx's", tc.name, res, err)
			}
			if !errors.Is(err, client.ErrUnanswered) {
				t.Fatalf("%s with a %v deadline whose only look-up got no answer = %v; want (as documented) an error matching ErrUnanswered too",
					tc.name, time.Second, err)
			}
		})
	}
}
