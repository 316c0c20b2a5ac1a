package app

import (
	"context"
	"testing"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/streams"
)

// Regression (found in review, seventeenth session): the /readyz
// streams check (8f12d27) caches its answer for 5s, errors included, and
// the answer it caches may be about the probe, not the streams: /readyz
// shares one 2s context between its checks (a slow stores ping leaves the
// streams look-up none), and a prober that hangs up cancels it. That
// context error is then served to every probe for the next 5s: the
// worker flaps out of service while all three streams exist.
func TestStreamsCheckDoesNotCacheItsCallersCancellation(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	sc := streams.Config{}.WithDefaults()
	ctx := context.Background()
	if _, err := streams.Ensure(ctx, js, sc); err != nil {
		t.Fatal(err)
	}
	c := newStreamsCheck(js, sc.RequestsStream, sc.ResultsStream, sc.DLQStream)

	gone, cancel := context.WithCancel(ctx)
	cancel() // the probe that gave up (or whose budget a slower check used)
	if err := c.Check(gone); err == nil {
		t.Fatal("a check with a cancelled context answered ready without looking")
	}
	if err := c.Check(ctx); err != nil {
		t.Errorf("the next probe, with time to look, is told %v although the streams exist", err)
	}
}
