package client_test

import (
	"testing"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/pkg/client"
)

// Regression (found in review, nineteenth session): Await subscribes and
// then flushes the connection (a PING it waits the PONG of) before it looks
// at the stream. When the connection drops while that PING is unanswered
// (a NATS server restart, a dropped link), nats.go closes every pending
// flush channel and FlushWithContext returns
// nats.ErrConnectionClosed, although the connection is only reconnecting and
// comes back at once. Await returns that error as final: `producer send
// --wait` exits 1 ("nats: connection closed") and a batch line is "error"
// (exit 1) for a request that was submitted and completes right after the
// reconnect. The look-ups Await and the batch make were fixed for exactly
// this restart (README, sixteenth and seventeenth sessions); the flush was
// not. Correct: while the connection is reconnecting (not closed for good),
// Await flushes again after the reconnect and goes on waiting, so it returns
// the result published after the reconnect.
func TestAwaitSurvivesAFlushLostInAReconnect(t *testing.T) {
	o := awaitAcrossACut(t, "inv-flush-cut",
		func(_ *client.Client, proxy *natstest.CutProxy) {
			proxy.SetSwallow(true) // from now on the client's bytes go nowhere
		},
		(*natstest.CutProxy).SwallowedPing) // Await's flush PING is in flight, unanswered
	if o.err != nil {
		t.Fatalf("Await = %v; want the result published after the reconnect (the connection was only reconnecting)", o.err)
	}
	if o.res.Content != "done" {
		t.Fatalf("Await = %+v", o.res)
	}
}
