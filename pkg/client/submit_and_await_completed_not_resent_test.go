package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/client/clienttest"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review, twenty-fourth session): SubmitAndAwait
// published a request again whose finished result its look-up had just
// found. A Go batch job re-run over the same requests (stable invocation
// ids) calls SubmitAndAwait for each. SubmitAndAwait looked the id up
// first and found the completed result, then published the request again
// anyway, and only then returned that stored result. Inside the duplicate
// window the server drops the copy; after it (a rerun the next morning)
// every completed request is stored again in the work queue: a re-run of
// 50,000 completed requests queues 50,000 copies ahead of new work, each
// of which a worker must take, lock the session for, read the record of
// and answer from it (the real worker runs nothing; the work is pure
// load, and while the fleet is down the queue holds them all). `producer
// batch` does not do this (a completed line is "skipped", not sent); the
// client's own documentation says such a resubmission "runs nothing, so
// its result is the stored one". Expected: a completed (or dead-lettered,
// or non-BAD_INPUT failed) stored result is returned without publishing;
// only a BAD_INPUT refusal is sent again (TestSubmitAndAwaitAfterABadInputRefusalReturnsTheNewResult).
func TestSubmitAndAwaitOfACompletedRequestDoesNotPublishItAgain(t *testing.T) {
	const window = 200 * time.Millisecond
	tg := dupTargets(t, window)[0]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clienttest.Start(t, tg.JS, tg.Cfg, clienttest.Echo)
	c := newClient(t, tg)
	cases := []struct {
		id, text string
		status   envelope.Status
	}{
		{"nightly-42", "summarise ticket 42", envelope.StatusCompleted},
		{"nightly-43", "summarise ticket 43 [fail]", envelope.StatusFailed},
		{"nightly-44", "summarise ticket 44 [dlq]", envelope.StatusDeadLettered},
	}
	req := func(id, text string) *envelope.Request {
		return &envelope.Request{InvocationID: id, Agent: "support", UserID: "u1", SessionID: "s1",
			Message: model.NewTextContent(model.RoleUser, text)}
	}
	for _, tc := range cases {
		if res, err := c.SubmitAndAwait(ctx, req(tc.id, tc.text)); err != nil || res.Status != tc.status {
			t.Fatalf("test premise: first run of %s %+v, %v; want %s", tc.id, res, err, tc.status)
		}
	}
	before := lastSeq(ctx, t, tg)
	time.Sleep(window + client.DuplicateSlack + 200*time.Millisecond) // the rerun comes after the duplicate window

	for _, tc := range cases {
		res, err := c.SubmitAndAwait(ctx, req(tc.id, tc.text))
		if err != nil || res.Status != tc.status {
			t.Fatalf("rerun of %s: %+v, %v; want the stored %s result", tc.id, res, err, tc.status)
		}
		if after := lastSeq(ctx, t, tg); after != before {
			t.Fatalf("SubmitAndAwait of %s, whose %s result it had just looked up, published the request again "+
				"(requests stream last sequence %d -> %d): a rerun queues every finished request for the fleet again",
				tc.id, tc.status, before, after)
		}
	}
}

// lastSeq is the requests stream's last sequence.
func lastSeq(ctx context.Context, t *testing.T, tg streamstest.Target) uint64 {
	t.Helper()
	s, err := tg.JS.Stream(ctx, tg.Cfg.RequestsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq
}
