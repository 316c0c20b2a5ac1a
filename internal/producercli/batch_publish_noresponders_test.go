package producercli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/producercli"
	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/client"
)

// Regression (found in review, twenty-first session): a line whose request
// subject no stream stores fails at once, not resent until its timeout.
// A producer configured with a request prefix no stream captures (a typo
// in the prefix, a fleet set up with another one): the server is up, the
// requests stream exists, and every publish gets "no responders" at once.
// Before the change the line failed at once; now publish takes no
// responders for an outage (the stream check finds the stream) and sends
// the line again until its --timeout: each line of the batch hangs for
// the whole timeout (2 minutes by default) before it fails.
func TestBatchPublishToAnUncapturedSubjectFailsAtOnce(t *testing.T) {
	tg := streamstest.Embedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := producercli.ClientConfig(tg.Cfg)
	cfg.RequestPrefix = "agentfleet.typo.requests"
	c, err := client.New(tg.JS, tg.NC, cfg)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := producercli.ParseBatch(strings.NewReader(
		`{"invocation_id":"typo-1","agent":"support","user_id":"u1","session_id":"s1","text":"hello"}` + "\n"))
	if err != nil || len(lines) != 1 || lines[0].Err != nil {
		t.Fatalf("test premise: %+v %v", lines, err)
	}
	start := time.Now()
	res, err := producercli.RunBatch(ctx, c, lines, producercli.BatchOptions{Concurrency: 1, Timeout: 20 * time.Second})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if took > 5*time.Second {
		t.Fatalf("line whose subject no stream captures took %v to fail (outcome %q, err %v); want it to fail at once: the server is up and says no stream takes the subject", took.Round(time.Second), res[0].Outcome, res[0].Err)
	}
}
