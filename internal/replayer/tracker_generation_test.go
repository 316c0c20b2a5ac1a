package replayer

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review, eighteenth session): the tracker took any
// result published for an invocation after its replay was registered as
// that replay's result, whatever generation it belonged to. A worker
// dead-letters in three steps (DLQ entry with its PubAck, record, then the
// dead_lettered result; a result publish that fails is re-sent by the
// redelivery after the infra delay) and keeps the session lock until that
// result is out, so a replay that a drain pass or an on-call run publishes
// in that window got the OLD generation's dead_lettered result (Nats-Msg-Id
// res-<id>-0-dead_lettered) before its own. The canary then halted with
// exit 2 ("dead_lettered SERVER") although the replay completed, and the
// auto-halt, the drain's back-off and the summary counted a failure that
// did not happen. A result whose id names an older replay count than the
// replay's is ignored now.
func TestCanaryIgnoresTheDeadLetteredGenerationsOwnResult(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	ids := x.seed("lag", 1, "SERVER", 0)
	id := ids[0]
	f, plan := x.openAndPlan(ctx, Selection{MaxReplays: 3})
	if len(plan) != 1 || plan[0].Action != ActionReplay {
		t.Fatalf("plan %+v", plan)
	}
	publish := func(st envelope.Status, replay int) error {
		res := &envelope.Result{V: envelope.Version, InvocationID: id, Status: st, ModelCalls: 1, Attempts: 1}
		if st != envelope.StatusCompleted {
			res.ErrorClass, res.UserMessage = "SERVER", worker.MsgQueued
		}
		data, err := res.Encode()
		if err != nil {
			return err
		}
		msg := &nats.Msg{Subject: x.sc.ResultSubject(id), Data: data, Header: nats.Header{}}
		msg.Header.Set(envelope.HeaderMsgID, worker.ResultMsgID(id, replay, st))
		_, err = x.js.PublishMsg(ctx, msg)
		return err
	}
	sum := NewSummary()
	err := Execute(ctx, f, plan, ExecOptions{Canary: 1, ResultTimeout: 20 * time.Second, Summary: sum,
		afterPublish: func(p Planned) error {
			// The worker that dead-lettered generation 0 publishes its
			// result now (its lock held the replay back until then) ...
			if err := publish(envelope.StatusDeadLettered, 0); err != nil {
				return err
			}
			// ... and the replay (generation 1) then runs and completes.
			return publish(envelope.StatusCompleted, 1)
		}})
	var he *HaltError
	if errors.As(err, &he) {
		t.Fatalf("the replay completed (result res-%s-1-completed), but the run halted: %v (summary %+v)", id, err, sum.Total())
	}
	if err != nil {
		t.Fatal(err)
	}
	if c := sum.Total(); c.Completed != 1 || c.DeadLettered != 0 {
		t.Fatalf("summary %+v: want the replay counted completed, not dead-lettered again", c)
	}
}

// resultReplay reads the replay count of worker.ResultMsgID, also for
// invocation ids with '-' and '_' in them, and says when an id is not one.
func TestResultReplayReadsTheWorkersResultMsgID(t *testing.T) {
	for _, id := range []string{"a", "lag-0", "x-1-2", "u_v-3"} {
		for _, n := range []int{0, 1, 12} {
			for _, st := range []envelope.Status{envelope.StatusCompleted, envelope.StatusDeadLettered, envelope.StatusFailed} {
				got, ok := resultReplay(worker.ResultMsgID(id, n, st), id)
				if !ok || got != n {
					t.Errorf("resultReplay(%q) = %d, %v; want %d", worker.ResultMsgID(id, n, st), got, ok, n)
				}
			}
		}
	}
	for _, c := range []struct{ msgID, id string }{
		{"", "a"}, {"a", "a"}, {"res-a-", "a"}, {"res-a-x-completed", "a"}, {"res-b-1-completed", "a"}, {"res-a-1", "a"},
	} {
		if n, ok := resultReplay(c.msgID, c.id); ok {
			t.Errorf("resultReplay(%q, %q) = %d, true; want not ok", c.msgID, c.id, n)
		}
	}
}
