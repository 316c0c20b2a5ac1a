package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/dlq"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (left open in the twenty-third session, fixed in the
// twenty-fourth): a result whose tools_run alone exceeded max_payload (tens
// of thousands of tool calls) was put back for ever. fitResult cut the
// result's texts but could not shrink tools_run, so "fit result" failed
// and the message was Nak'ed as the worker's own infrastructure on every
// delivery; after the run limit its dead letter's result failed to publish
// the same way. Every message must complete, be dead-lettered or be
// reported failed.
//
// Now a result keeps the most recent tool names, at most 4 KiB of them (as
// a DLQ entry's tools_completed, dlq.MaxToolsCompletedSize), and counts the
// earlier ones in tools_run_omitted.

// A tool name as long as providers accept (tool.MaxNameLen): 1 MiB of
// tools_run is about 16,000 calls of it.
var longToolName = "lookup_" + strings.Repeat("x", tool.MaxNameLen-len("lookup_"))

// toolsRunSize is the size of res.ToolsRun as encoded in the result.
func toolsRunSize(t *testing.T, res *envelope.Result) int {
	t.Helper()
	b, err := json.Marshal(res.ToolsRun)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

func TestResultWithMoreToolsThanMaxPayloadCompletes(t *testing.T) {
	e := newEnv(t)
	calls := int(e.nc.MaxPayload())/(len(longToolName)+3) + 1000 // the names alone exceed max_payload
	lookup := tool.MustFunc(longToolName, "looks something up", func(context.Context, struct{}) (map[string]any, error) {
		return map[string]any{"ok": true}, nil
	})
	fcs := make([]*model.FunctionCall, calls)
	for i := range fcs {
		fcs[i] = &model.FunctionCall{ID: fmt.Sprintf("c%d", i), Name: longToolName, Args: map[string]any{}}
	}
	llm := agenttest.NewScriptedModel(agenttest.Reply(agenttest.Calls(fcs...)), agenttest.Reply(agenttest.Text("looked it all up")))
	ag := e.supportAgent(llm, lookup)
	ag.MaxParallelTools = 64
	w := e.startWorker("w1", ag, worker.Config{})
	e.publish(request("inv-many-tools", "s-many", "look everything up"), nil)

	// The signal either way: the result, or the message put back as the
	// worker's own infrastructure (which, without the fix, it is on every
	// delivery).
	var res *envelope.Result
	eventually(t, "the result, or the message put back", func() bool {
		select {
		case r := <-e.results:
			e.seen[r.InvocationID] = r
		default:
		}
		res = e.seen["inv-many-tools"]
		return res != nil || w.count("support", "nak_infra") > 0
	})
	t.Logf("%d tool calls (max_payload %d); result: %v; nak_infra = %v", calls, e.nc.MaxPayload(), res != nil, w.count("support", "nak_infra"))
	if res == nil {
		t.Fatalf("the message was put back (nak_infra %v) instead of completing: a result of %d tool names never fits max_payload %d",
			w.count("support", "nak_infra"), calls, e.nc.MaxPayload())
	}
	t.Logf("result: status %q content %q, %d tool names (%d bytes) kept, %d omitted", res.Status, res.Content, len(res.ToolsRun), toolsRunSize(t, res), res.ToolsRunOmitted)
	if res.Status != envelope.StatusCompleted || res.Content != "looked it all up" || res.Truncated {
		t.Fatalf("result %q %q truncated %v, want the whole answer, completed", res.Status, res.Content, res.Truncated)
	}
	if n := toolsRunSize(t, res); n > dlq.MaxToolsCompletedSize || len(res.ToolsRun) == 0 {
		t.Fatalf("tools_run holds %d names in %d bytes, want some, within %d bytes", len(res.ToolsRun), n, dlq.MaxToolsCompletedSize)
	}
	if len(res.ToolsRun)+res.ToolsRunOmitted != calls {
		t.Fatalf("%d names kept + %d omitted, want the %d tool calls counted", len(res.ToolsRun), res.ToolsRunOmitted, calls)
	}
	// What the user was answered is what the record keeps: a redelivery
	// after a lost ack publishes the same bytes.
	rec, err := e.invs.Get(context.Background(), "inv-many-tools")
	if err != nil {
		t.Fatal(err)
	}
	r, err := worker.DecodeRecord(rec)
	if err != nil || r.Result == nil {
		t.Fatalf("record: %v", err)
	}
	if rec.Status != session.InvocationCompleted || len(r.Result.ToolsRun) != len(res.ToolsRun) || r.Result.ToolsRunOmitted != res.ToolsRunOmitted {
		t.Fatalf("record %s with %d names, %d omitted; the result %d, %d", rec.Status, len(r.Result.ToolsRun), r.Result.ToolsRunOmitted, len(res.ToolsRun), res.ToolsRunOmitted)
	}
	eventually(t, "the request acked", func() bool { return e.pending() == 0 })
}

// A completed record written before tools_run was bounded (by an earlier
// version, whose publish of it then failed) is answered on its redelivery
// with the bounded list, instead of failing that publish for ever.
func TestRecordedResultWithMoreToolsThanMaxPayloadIsPublished(t *testing.T) {
	e := newEnv(t)
	calls := int(e.nc.MaxPayload())/(len(longToolName)+3) + 1000
	names := make([]string, calls)
	for i := range names {
		names[i] = longToolName
	}
	names[len(names)-1] = "refund_order" // the most recent is kept
	old := &envelope.Result{V: envelope.Version, InvocationID: "inv-old-many", Status: envelope.StatusCompleted,
		Content: "refunded", ModelCalls: 2, Attempts: 1, ToolsRun: names}
	payload, err := json.Marshal(worker.Record{Result: old})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := e.invs.Transition(ctx, &session.Invocation{ID: "inv-old-many", Status: session.InvocationCompleted, Result: payload,
		Session: session.Key{App: "support", UserID: "u1", SessionID: "s-old"}}); err != nil {
		t.Fatal(err)
	}
	llm := agenttest.NewScriptedModel()
	w := e.startWorker("w1", e.supportAgent(llm), worker.Config{})
	e.publish(request("inv-old-many", "s-old", "refund"), nil)
	var res *envelope.Result
	eventually(t, "the result, or the message put back", func() bool {
		select {
		case r := <-e.results:
			e.seen[r.InvocationID] = r
		case <-time.After(10 * time.Millisecond):
		}
		res = e.seen["inv-old-many"]
		return res != nil || w.count("support", "nak_infra") > 0
	})
	if res == nil {
		t.Fatalf("the duplicate was put back (nak_infra %v): its recorded result of %d tool names never fits", w.count("support", "nak_infra"), calls)
	}
	t.Logf("re-published: %q %q, %d names kept (last %q), %d omitted", res.Status, res.Content, len(res.ToolsRun), res.ToolsRun[len(res.ToolsRun)-1], res.ToolsRunOmitted)
	if res.Status != envelope.StatusCompleted || res.Content != "refunded" || len(res.ToolsRun)+res.ToolsRunOmitted != calls ||
		res.ToolsRun[len(res.ToolsRun)-1] != "refund_order" || toolsRunSize(t, res) > dlq.MaxToolsCompletedSize {
		t.Fatalf("re-published %q %q with %d names (%d bytes), %d omitted: want the recorded answer with the most recent names within %d bytes",
			res.Status, res.Content, len(res.ToolsRun), toolsRunSize(t, res), res.ToolsRunOmitted, dlq.MaxToolsCompletedSize)
	}
	eventually(t, "the duplicate acked", func() bool { return w.count("support", "duplicate") == 1 && e.pending() == 0 })
	if llm.Calls() != 0 {
		t.Fatalf("the model was called %d times for a completed invocation", llm.Calls())
	}
}
