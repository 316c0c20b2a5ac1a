package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
)

// Regression (found in review of this session's fix, twenty-third
// session): Await with a cached results-stream handle took a deleted
// results stream (its direct gets answered by no one) for JetStream not
// being back and waited out its deadline.
//
// The commit's comment in AwaitAfter says "Any other error (a missing
// results stream, a bad result) ends Await". That holds only for a client
// that has no results-stream handle yet (js.Stream answers "stream not
// found"). AGENT_RESULTS allows direct gets, so a client holding the
// handle (any long-lived producer, every batch line after the first) reads
// with $JS.API.DIRECT.GET.AGENT_RESULTS..., which nobody answers when the
// stream is gone: nats.ErrNoResponders. Before 882a367 Await failed at
// once with that error; now it takes it for "JetStream not back yet",
// waits the whole context and returns an error matching
// context.DeadlineExceeded: a deleted stream is reported as a result that
// did not come in time. Now Lookup, on no responders, asks the stream's
// info (bounded): "stream not found" ends Await and drops the cached
// handle.
func TestAwaitWithTheResultsStreamGoneFailsAtOnce(t *testing.T) {
	tg := streamstest.Embedded(t)
	c := newClient(t, tg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Lookup(ctx, "stream-gone-warm-up"); err == nil {
		t.Fatal("premise: warm-up has a result")
	}
	if err := tg.JS.DeleteStream(ctx, tg.Cfg.ResultsStream); err != nil {
		t.Fatal(err)
	}
	actx, acancel := context.WithTimeout(ctx, 4*time.Second)
	defer acancel()
	res, err := c.Await(actx, "stream-gone")
	t.Logf("Await = %+v, %v", res, err)
	if err == nil {
		t.Fatalf("Await with the results stream deleted = %+v; want an error", res)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Await with the results stream deleted = %v: waited out its deadline and reports a timeout; "+
			"want an error at once that says the results stream is missing (or at least that JetStream does not answer)", err)
	}
}
