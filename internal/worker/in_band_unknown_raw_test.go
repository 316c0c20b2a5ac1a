package worker_test

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/envelope"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Regression (found in review, eighteenth session): DESIGN.md, taxonomy: "UNKNOWN: never retry, keep the raw message,
// review" (the seed: the raw errorMessage() "must be kept alongside the
// class"). The runbook's "Unknown review" sends on-call to the DLQ for it
// ("Read their raw messages (`dlq-replayer list --class UNKNOWN`)"), and
// the weekly-review alert says "the raw messages are in the logs and DLQ
// entries". An in-band UNKNOWN (a finish reason no rule knows, here OTHER
// with the provider's finish message) is dead-lettered with the reason
// "model answered without a usable response (UNKNOWN in band: OTHER)": the
// provider's message is not in the entry, and the empty answer is kept out
// of the session, so the DLQ holds nothing of what happened.
func TestInBandUnknownEntryKeepsTheRawMessage(t *testing.T) {
	const raw = "candidate stopped: citation block could not be rendered (provider ref 7f3a)"
	e := newEnv(t)
	tm := taxonomy.NewMetrics(nil)
	ag := e.supportAgent(agenttest.NewScriptedModel(agenttest.Reply(&model.Response{
		FinishReason: model.FinishReasonOther, ErrorMessage: raw,
	})))
	ag.Callbacks.AfterModel = []agent.AfterModelCallback{taxonomy.AfterModel(taxonomy.CallbackOptions{Model: "m", Metrics: tm})}
	ag.Callbacks.OnModelError = []agent.OnModelErrorCallback{taxonomy.OnModelError(taxonomy.CallbackOptions{Model: "m", Metrics: tm})}
	e.startWorker("w1", ag, worker.Config{})
	e.publish(request("inv-other", "s1", "hi"), nil)
	res := e.await("inv-other")
	if res.Status != envelope.StatusDeadLettered || res.ErrorClass != string(taxonomy.Unknown) {
		t.Fatalf("precondition: result status %q class %q, want dead_lettered UNKNOWN", res.Status, res.ErrorClass)
	}
	entries := e.dlqEntries()
	if len(entries) != 1 {
		t.Fatalf("precondition: %d DLQ entries, want 1", len(entries))
	}
	if got := entries[0].Reason; !strings.Contains(got, "citation block could not be rendered") {
		t.Errorf("UNKNOWN DLQ entry reason = %q: the provider's raw message %q is not kept (DESIGN: UNKNOWN keeps the raw message for review)", got, raw)
	}
}
