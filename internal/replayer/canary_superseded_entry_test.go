package replayer

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/pkg/dlq"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review, twenty-third session): the canary replayed
// an entry its invocation record showed superseded (a newer entry of the
// invocation had already run), the worker acked it without running it,
// and the canary halted with exit 2 against a provider that works.
//
// The runbook's crash case (step 5, "Safe to interrupt and run again"): an
// interrupted replay run left a replayed entry behind (stale-0, replay
// count 0); its replay ran while the provider was still down and failed
// again, so the DLQ also holds stale-0's next entry (replay count 1) and
// the invocation record is at replay 1. More than the requests' duplicate
// window later the provider is fixed and on-call reruns with a canary.
//
// The old entry's replay (replay:stale-0:1) is published afresh and the
// worker acks it without running it (its record is at that replay
// already): it proves nothing about the provider. The canary took it as
// its one fresh replay, waited in vain for a result of its generation and
// halted with exit 2, "the cause is not fixed", against a provider that
// works. An entry whose invocation the record shows at its replay count or
// later is superseded (like an already completed one) and must not be a
// canary slot; the canary is the newer entry's replay, which completes.
func TestCanaryIsNotMadeOfASupersededEntry(t *testing.T) {
	x := newFx(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const window = 300 * time.Millisecond
	s, err := x.js.Stream(ctx, x.sc.RequestsStream)
	if err != nil {
		t.Fatal(err)
	}
	scfg := s.CachedInfo().Config
	scfg.Duplicates = window
	if _, err := x.js.UpdateStream(ctx, scfg); err != nil {
		t.Fatal(err)
	}
	res := x.watchResults()
	x.seed("stale", 1, "SERVER", 0)
	e0 := supersededDLQEntries(t, x, ctx)[0]

	// The interrupted run's replay of it, run while the provider is down.
	down := x.startWorker("w-down", simModel(t, "server=1.0"))
	if _, err := x.js.PublishMsg(ctx, ReplayMsg(x.sc, e0), jetstream.WithExpectStream(x.sc.RequestsStream)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "stale-0's replay dead-lettered again", 30*time.Second, func() bool {
		return res.count([]string{"stale-0"}, envelope.StatusDeadLettered) == 1 && len(x.dlqIDs()) == 2
	})
	down.stop()

	// The duplicate window passes.
	probe := func() bool {
		m := &nats.Msg{Subject: x.sc.RequestSubject("probe"), Data: []byte("{}"), Header: nats.Header{}}
		m.Header.Set("Nats-Msg-Id", "probe")
		ack, err := x.js.PublishMsg(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		return !ack.Duplicate
	}
	probe()
	eventually(t, "the duplicate window to pass", 10*time.Second, probe)

	// The provider is fixed.
	x.startWorker("w-ok", simModel(t, ""))
	out := x.run(ctx, map[string]string{"AGENTFLEET_REPLAY_RESULT_TIMEOUT": "3s"},
		"replay", "--yes", "--canary", "1", "--rate", "0")
	if out.code != ExitOK {
		t.Fatalf("canary of 1 against a provider that works: exit %d, want %d: the canary was the stale entry's replay, "+
			"which the worker acks without running\nstdout:\n%s\nstderr:\n%s", out.code, ExitOK, out.stdout, out.stderr)
	}
	contains(t, out.stderr, "stale-0 SERVER: superseded")
	if tot := parseSummaryTotal(t, out.stdout); tot["ALREADY REPLAYED"] != 1 || tot["REPLAYED"] != 1 || tot["COMPLETED"] != 1 {
		t.Fatalf("summary %v: want the superseded entry already replayed (not published) and the newer one replayed and completed\n%s", tot, out.stdout)
	}
}

// supersededDLQEntries returns the DLQ's decodable entries.
func supersededDLQEntries(t *testing.T, x *fx, ctx context.Context) []*dlq.Entry {
	t.Helper()
	var out []*dlq.Entry
	r := dlq.NewReader(x.js, dlq.Config{Stream: x.sc.DLQStream, Prefix: x.sc.DLQPrefix})
	for it, err := range r.List(ctx, dlq.Filter{}) {
		if it == nil {
			t.Fatal(err)
		}
		if it.Entry != nil {
			out = append(out, it.Entry)
		}
	}
	return out
}
