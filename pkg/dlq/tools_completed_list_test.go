package dlq_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// Regression (found in review, eighteenth session): DESIGN.md's DLQ entry has `tools_completed[]`: a list. The worker
// dead-letters a request that never ran a tool (BAD_INPUT, the run limit,
// a failure before any tool) with a nil ToolsCompleted, and the stored
// entry says "tools_completed": null. A script reading the DLQ (or
// `dlq-replayer list --json`, which prints the entries as stored) with
// `jq '.entry.tools_completed[]'`, or a consumer in a language that maps
// the field to a list, fails on exactly the entries with nothing to undo.
// (The same class of defect was fixed for `stats --json` rows and
// `show --json` entries in the eighteenth session.)
func TestStoredEntryToolsCompletedIsAList(t *testing.T) {
	tg := streamstest.Embedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p := dlq.NewPublisher(tg.JS, dlqConfig(tg))

	// What the worker's publishRaw builds for an undecodable request.
	e := &dlq.Entry{InvocationID: "inv-bad-1", Agent: "support", Class: "BAD_INPUT",
		Reason: "invalid envelope: not a JSON request object", DeliveryCount: 1, Worker: "w-1", SourceSeq: 7}
	e.SetRequest([]byte("not json"))
	ack, err := p.Publish(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	it, err := dlq.NewReader(tg.JS, dlqConfig(tg)).Get(ctx, ack.Sequence)
	if err != nil {
		t.Fatal(err)
	}
	var stored map[string]json.RawMessage
	if err := json.Unmarshal(it.Data, &stored); err != nil {
		t.Fatal(err)
	}
	raw, ok := stored["tools_completed"]
	var list []string
	if !ok || string(raw) == "null" || json.Unmarshal(raw, &list) != nil {
		t.Fatalf("stored DLQ entry has \"tools_completed\": %s, want a JSON list ([] when no tool ran; DESIGN.md: tools_completed[])\n%s", raw, it.Data)
	}
}
