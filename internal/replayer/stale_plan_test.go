package replayer

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// Two on-call engineers run replay at once (runbook step 5: "Two on-call
// engineers running it at once do not replay anything twice"; doc.go: the
// second publish "is counted as already replayed, never as a second
// replay"). Replayer A planned the entry, then spent longer than the
// requests' duplicate window before reaching it (a low --rate, a cooldown
// pause, a canary wait); replayer B replayed it meanwhile and deleted it from
// the DLQ. A published the replay again from its stale plan, outside the
// window, and counted it as a fresh replay; it now finds the entry gone and
// counts it as already gone (it was counted "already replayed" until the
// twenty-fifth session, when parks and prompted runs began to find entries
// purged or parked by another engineer gone too).
func TestStalePlanDoesNotReplayAnEntryAnotherReplayerHandled(t *testing.T) {
	x := newFx(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A short requests duplicate window stands in for a run that outlasts
	// the default 10 minutes.
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
	x.seed("stale", 1, "SERVER", 0)

	// Replayer A plans (walks the DLQ) first.
	fa, planA := x.openAndPlan(ctx, Selection{MaxReplays: 3})
	if len(planA) != 1 || planA[0].Action != ActionReplay {
		t.Fatalf("plan A = %+v", planA)
	}
	// Replayer B replays the entry and removes it from the DLQ.
	fb, planB := x.openAndPlan(ctx, Selection{MaxReplays: 3})
	sumB := NewSummary()
	if err := Execute(ctx, fb, planB, ExecOptions{Summary: sumB}); err != nil {
		t.Fatal(err)
	}
	if sumB.Total().Replayed != 1 || len(x.dlqIDs()) != 0 {
		t.Fatalf("replayer B: %+v, DLQ %v", sumB.Total(), x.dlqIDs())
	}
	// Wait (by a probe published right after B's replay) until the
	// duplicate window has passed.
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

	// A reaches the entry now.
	sumA := NewSummary()
	err = Execute(ctx, fa, planA, ExecOptions{Summary: sumA})
	ids := x.requestMsgIDs()
	if ids["replay:stale-0:1"] != 1 {
		t.Fatalf("replay:stale-0:1 stored %d times: the entry B had replayed and deleted was replayed again by A (A: err %v, summary %+v)",
			ids["replay:stale-0:1"], err, sumA.Total())
	}
	if got := sumA.Total(); got.Replayed != 0 || got.AlreadyGone != 1 {
		t.Fatalf("replayer A counts %+v for an entry another replayer handled, want 1 already gone", got)
	}
}
