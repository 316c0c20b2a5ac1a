package worker_test

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/envelope"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// A model answer with an unknown finish reason (OTHER) is an in-band
// UNKNOWN failure the worker dead-letters for review. When that answer is
// long (264 KB of markup, about 1.1 MB once JSON-escaped, beyond the 1 MiB
// max_payload), the dead_lettered result still fits one NATS message and is
// published, and the message acked: "every message ends in exactly one of
// completed, dead-lettered, failed-reported". The unusable answer was the
// result's user message, which fitResult did not cut: the record said
// dead-lettered, every redelivery failed to re-publish it and Nak'ed, and
// the message was never acked nor answered. Now the user is told MsgFailed.
func TestDeadLetteredResultWithLongAnswerIsPublished(t *testing.T) {
	e := newEnv(t)
	text := strings.Repeat("<b>&</b>", 33000)
	resp := agenttest.Text(text)
	resp.FinishReason = model.FinishReasonOther
	llm := agenttest.NewScriptedModel(agenttest.Reply(resp))
	w := e.startWorker("w1", e.supportAgent(llm), worker.Config{})
	e.publish(request("inv-big-dl", "s1", "render the table"), nil)
	res := e.await("inv-big-dl")
	if res.Status != envelope.StatusDeadLettered || res.ErrorClass != string(taxonomy.Unknown) || res.UserMessage != worker.MsgFailed {
		t.Fatalf("result status %q class %q message %.40q, want dead_lettered UNKNOWN with MsgFailed", res.Status, res.ErrorClass, res.UserMessage)
	}
	eventually(t, "the dead letter acked", func() bool { return e.pending() == 0 && w.count("support", "dead_lettered") == 1 })
}
