package agent

import (
	"encoding/json"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// FuzzStoredEvents: session events read back from a store (any JSON the
// event type decodes, as the Redis and NATS KV services decode them) never
// panic what a resumed invocation computes from them. The conversation
// sent to the model has no empty turn, a role on every turn and no two
// function-response turns in a row; pending calls are calls of the events,
// at least those whose responses are missing (by ID and count); completed
// tools are the other calls, each with a response of its own;
// the earlier model calls charged are at most the events; a tool-protocol
// break is never a final response.
func FuzzStoredEvents(f *testing.F) {
	for _, s := range []string{
		`[{"id":"e1","invocation_id":"inv","author":"user","content":{"role":"user","parts":[{"text":"refund A-1"}]}},` +
			`{"invocation_id":"inv","author":"support","content":{"role":"model","parts":[{"function_call":{"id":"c1","name":"get_order","args":{"order_id":"A-1"}}}]}},` +
			`{"invocation_id":"inv","author":"support","content":{"role":"user","parts":[{"function_response":{"id":"c1","name":"get_order","response":{"status":"ok"}}}]}},` +
			`{"invocation_id":"inv","author":"support","content":{"role":"user","parts":[{"function_response":{"id":"c2","name":"x","response":{"reason":"r"}}}]}},` +
			`{"invocation_id":"inv","author":"support","finish_reason":"MALFORMED_FUNCTION_CALL"}]`,
		`[null,{},{"content":null},{"content":{"parts":[null]}},{"content":{"role":"","parts":[{"text":""}]}}]`,
		`[{"author":"support","substituted":true,"content":{"parts":[{"text":"sorry"}]}},{"author":"support","cut_off":true,"content":{"parts":[{"text":"half"}]}}]`,
		`[{"author":"support","content":{"role":"model","parts":[{"function_call":{"name":"f"}},{"function_call":{"name":"f"}}]}},{"author":"support","actions":{"end_invocation":true}}]`,
		`[{"invocation_id":"a","author":"support","content":{"role":"model","parts":[{"function_call":{"id":"call_0","name":"pay"}},{"function_call":{"id":"call_0","name":"lookup"}}]}},` +
			`{"invocation_id":"a","author":"support","same_call":true,"content":{"role":"model","parts":[{"function_call":{"id":"call_0","name":"pay"}}]}},` +
			`{"invocation_id":"b","author":"support","content":{"role":"model","parts":[{"function_call":{"id":"call_0","name":"pay"}}]}},` +
			`{"invocation_id":"a","author":"support","content":{"role":"user","parts":[{"function_response":{"id":"call_0","name":"lookup","response":{}}},{"function_response":{"id":"call_0","name":"pay","response":{}}}]}},` +
			`{"invocation_id":"a","author":"support","content":{"role":"user","parts":[{"function_response":{"id":"call_0","name":"x","response":{}}},{"function_response":{"id":"call_0","response":{}}}]}}]`,
		`[{"author":"support","short_circuited":true,"error_code":"UNEXPECTED_TOOL_CALL"},{"author":"support","partial":true,"content":{"parts":[{"text":"p"}]}}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var events []*session.Event
		if json.Unmarshal(data, &events) != nil {
			return
		}
		for i, e := range events {
			if e == nil {
				events[i] = new(session.Event) // the stores decode each into a new Event
			}
		}
		contents := buildContents(events)
		// An event is one turn at most, and an event with calls one more:
		// the answers to its calls (noResult for a call whose response is
		// missing, so one turn per event is not a bound).
		maxTurns := len(events)
		for _, e := range events {
			if e.Content.HasFunctionCalls() {
				maxTurns++
			}
		}
		if len(contents) > maxTurns {
			t.Fatalf("%d turns from %d events", len(contents), len(events))
		}
		prevResponses := false
		for i, c := range contents {
			if c == nil || c.IsEmpty() || c.Role == "" {
				t.Fatalf("turn %d is empty or has no role: %+v", i, c)
			}
			onlyResponses := c.HasFunctionResponses() && !c.HasFunctionCalls() && !hasText(c)
			if onlyResponses && prevResponses {
				t.Fatalf("turns %d and %d both only answer calls", i-1, i)
			}
			prevResponses = onlyResponses
		}

		calls := map[*model.FunctionCall]bool{}
		callsOf := map[string]int{}     // calls by ID
		responsesOf := map[string]int{} // responses by ID
		responses := map[*model.FunctionResponse]bool{}
		for _, e := range events {
			for _, fc := range e.FunctionCalls() {
				calls[fc] = true
				callsOf[fc.ID]++
			}
			for _, fr := range e.FunctionResponses() {
				responses[fr] = true
				responsesOf[fr.ID]++
			}
			if e.ToolProtocolBreak() && e.IsFinalResponse() {
				t.Fatalf("a tool-protocol break taken as the final response: %+v", e)
			}
			_ = toolProtocolNote(e)
		}
		// A stored session may hold one call ID many times (sessions
		// stored before the loop owned its call IDs): a response answers
		// one call, so an ID with more calls than responses leaves at
		// least the difference pending, and a call whose ID no response
		// has is pending whatever the pairing.
		pending := map[*model.FunctionCall]bool{}
		pendingOf := map[string]int{}
		for _, fc := range pendingCalls(events) {
			if !calls[fc] || pending[fc] {
				t.Fatalf("pending call %+v is not a call of the events, or pending twice", fc)
			}
			pending[fc] = true
			pendingOf[fc.ID]++
		}
		for fc := range calls {
			if responsesOf[fc.ID] == 0 && !pending[fc] {
				t.Fatalf("call %+v has no response with its ID and is not pending", fc)
			}
		}
		for id, n := range callsOf {
			if pendingOf[id] < n-responsesOf[id] {
				t.Fatalf("ID %q: %d calls, %d responses, only %d pending", id, n, responsesOf[id], pendingOf[id])
			}
		}
		// Completed tools are the calls that are not pending, each with a
		// response of its ID that answers no other call.
		done := completedCalls(events)
		doneCalls := map[*model.FunctionCall]bool{}
		doneResponses := map[*model.FunctionResponse]bool{}
		for _, d := range done {
			if !calls[d.call] || !responses[d.response] || d.response.ID != d.call.ID {
				t.Fatalf("completed call %+v with response %+v: not a call and a response of the events with one ID", d.call, d.response)
			}
			if doneCalls[d.call] || doneResponses[d.response] || pending[d.call] {
				t.Fatalf("call %+v completed twice, or pending too, or its response %+v answers another call too", d.call, d.response)
			}
			doneCalls[d.call], doneResponses[d.response] = true, true
		}
		if len(done)+len(pending) != len(calls) {
			t.Fatalf("%d completed and %d pending calls of %d", len(done), len(pending), len(calls))
		}
		tools := CompletedToolsOf(events)
		if len(tools) != len(done) {
			t.Fatalf("CompletedToolsOf = %d tools, want the %d completed calls", len(tools), len(done))
		}
		for _, ct := range tools {
			_, _ = ct.Succeeded(), ct.OutcomeUnknown()
		}
		if n := countModelCalls(events, "support"); n < 0 || n > len(events) {
			t.Fatalf("%d earlier model calls in %d events", n, len(events))
		}
	})
}
