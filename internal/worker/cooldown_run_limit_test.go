package worker_test

import (
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/cooldown"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review, eighteenth session): a run whose model call
// the fleet cooldown refuses (it opened after the worker's cached status
// check: other workers' failures) is put back "until the cooldown ends",
// like the cooldown Nak before a run. But the refused run was counted as a
// run (the enter step's attempt), so a request that met the cooldown
// MaxDeliveries times in a provider outage (the herd Nak'ed until the end
// of the cooldown comes back together, and meets the next one) was
// dead-lettered UNKNOWN, "runs cut short (crash, kill, shutdown, lost lock
// or store failure)": never replayed automatically, a person must look at
// it, though nothing but the provider's outage happened and the model
// answers the next time. afterPanic's comment states the rule this
// broke: deliveries put back for a cooldown do not count, as for the run
// limit.
func TestCooldownRefusalsDoNotSpendTheRunLimit(t *testing.T) {
	e := newEnv(t)
	refused := func() agenttest.Step {
		return agenttest.Fail(&cooldown.OpenError{Model: "scripted", Until: time.Now()})
	}
	llm := agenttest.NewScriptedModel(refused(), refused(), refused(), agenttest.Reply(agenttest.Text("done")))
	e.startWorker("w1", e.supportAgent(llm), worker.Config{MaxDeliveries: 2})
	const id = "inv-cooldown-runs"
	e.publish(request(id, "s1", "hi"), nil)
	res := e.await(id)
	if res.Status != envelope.StatusCompleted {
		reason := ""
		if en := e.dlqEntries(); len(en) > 0 {
			reason = en[0].Reason
		}
		t.Errorf("after 3 cooldown refusals: result %s %s (DLQ reason %q), want completed: the model answered once the cooldown ended",
			res.Status, res.ErrorClass, reason)
	}
}
