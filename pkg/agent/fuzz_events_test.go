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
// function-response turns in a row; pending calls are calls of the events
// that no response answers; completed tools pair a call with a response;
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
		if len(contents) > len(events) {
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
		answered := map[string]bool{}
		for _, e := range events {
			for _, fc := range e.FunctionCalls() {
				calls[fc] = true
			}
			for _, fr := range e.FunctionResponses() {
				answered[fr.ID] = true
			}
			if e.ToolProtocolBreak() && e.IsFinalResponse() {
				t.Fatalf("a tool-protocol break taken as the final response: %+v", e)
			}
			_ = toolProtocolNote(e)
		}
		// A stored session may hold one call ID many times (sessions
		// stored before the loop owned its call IDs): a call is answered
		// when pairResponses pairs a response with it, not when its ID has
		// a response anywhere.
		paired := pairResponses(events, nil)
		for _, fc := range pendingCalls(events) {
			if !calls[fc] || paired[fc] != nil {
				t.Fatalf("pending call %+v is not an unanswered call of the events", fc)
			}
		}
		seen := map[string]bool{}
		for _, ct := range CompletedToolsOf(events) {
			if !answered[ct.CallID] || seen[ct.CallID] {
				t.Fatalf("completed tool %+v has no response, or twice", ct)
			}
			seen[ct.CallID] = true
			_, _ = ct.Succeeded(), ct.OutcomeUnknown()
		}
		if n := countModelCalls(events, "support"); n < 0 || n > len(events) {
			t.Fatalf("%d earlier model calls in %d events", n, len(events))
		}
	})
}
