package dlq_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// Regression (found in review, twenty-first session): a request of
// MaxWholeRequest bytes whose invocation completed hundreds of tool calls
// is dead-lettered whole, its tools_completed bounded within
// EntryFieldsReserve.
//
// EntryFieldsReserve (8 KiB) is said to cover a dead letter's own fields,
// "the tools completed" among them, so that every request the worker
// accepts (at most MaxWholeRequest) is dead-lettered whole and can be
// replayed. tools_completed has no bound: it lists every tool call of the
// whole invocation (agent.Outcome.CompletedTools, earlier runs included),
// and an agent's default budget is 500 model calls. An invocation that ran
// 400 tool calls before a transient failure has a ~10 KiB list, and the
// Publisher then cuts a request the worker accepted: the replayer skips the
// entry for good ("only a prefix ... cannot be replayed"). MaxWholeRequest
// is the worker's limit whenever streams.max_request_bytes is at or above
// it (a raised max_request_bytes, or a server with a larger max_payload).
func TestAcceptedRequestStaysWholeWithManyToolCalls(t *testing.T) {
	tg := streamstest.Embedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	whole := dlq.MaxWholeRequest(tg.NC.MaxPayload())
	head := `{"v":1,"invocation_id":"inv-tools","agent":"support","user_id":"u","session_id":"s","message":{"role":"user","parts":[{"text":"`
	tail := `"}]}}`
	req := []byte(head + strings.Repeat("x", whole-len(head)-len(tail)) + tail)
	if len(req) != whole {
		t.Fatalf("built %d bytes, want %d", len(req), whole)
	}

	tools := make([]string, 400)
	for i := range tools {
		tools[i] = "lookup_customer_orders"
	}
	now := time.Now().UTC()
	e := &dlq.Entry{
		InvocationID: "inv-tools", Agent: "support", Class: "SERVER", Reason: "model 503 after retries",
		Retryable: true, DeliveryCount: 1, FirstFailedAt: now, FailedAt: now, Worker: "host-1234",
		Model: "gemini-2.5-flash", ToolsCompleted: tools, SourceSeq: 7,
	}
	e.SetRequest(req)
	ack, err := dlq.NewPublisher(tg.JS, dlqConfig(tg)).Publish(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	it, err := dlq.NewReader(tg.JS, dlqConfig(tg)).Get(ctx, ack.Sequence)
	if err != nil {
		t.Fatal(err)
	}
	if it.Entry.RequestTruncated || !bytes.Equal(it.Entry.OriginalRequest(), req) {
		t.Fatalf("a %d-byte request (= MaxWholeRequest, accepted by the worker) of an invocation with %d completed tool calls was dead-lettered cut: truncated=%v, kept %d bytes; it can never be replayed",
			len(req), len(tools), it.Entry.RequestTruncated, len(it.Entry.OriginalRequest()))
	}
	if kept := it.Entry.ToolsCompleted; len(kept) == 0 || len(kept)+it.Entry.ToolsCompletedOmitted != len(tools) {
		t.Fatalf("tools_completed keeps %d names and omits %d, want them to add up to the %d completed", len(kept), it.Entry.ToolsCompletedOmitted, len(tools))
	}
}
