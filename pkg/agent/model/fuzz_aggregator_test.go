package model_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// FuzzAggregator: a provider stream of any chunks (decoded from JSON, with
// nil chunks, nil parts and empty texts) aggregates into partials that
// carry exactly the stream's text, in order, and one final response that
// holds the same text and every function call and response of the stream,
// in order, with the last chunk's finish reason, and no empty part.
func FuzzAggregator(f *testing.F) {
	for _, s := range []string{
		`[{"content":{"role":"model","parts":[{"text":"Refund"}]}},{"content":{"parts":[{"text":"ing"}]}},{"finish_reason":"STOP","usage":{"total_tokens":3}}]`,
		`[{"content":{"parts":[{"text":"a"},{"function_call":{"id":"1","name":"f","args":{"x":1}}},{"text":"b"}]}},null,{"content":{"parts":[null,{"text":""}]},"finish_reason":"MAX_TOKENS"}]`,
		`[{"content":{"parts":[{"function_response":{"name":"f","response":{}}}]}},{"content":{"parts":[]}}]`,
		`[]`, `[null]`, `[{"content":{}}]`, `[{"content":{"parts":[{"text":"x","function_call":{"name":"both"}}]}}]`,
		`[{"partial":true,"turn_complete":true,"error_code":"SAFETY","error_message":"blocked"}]`,
		`[{"content":{"parts":[{"text":"a","thought_signature":"c2ln"}]}},{"content":{"parts":[{"text":"b"},{"thought_signature":"c2lnMg=="}]}}]`,
		`[{"content":{"parts":[{"function_call":{"name":"f"}}]}},{"content":{"parts":[{"thought_signature":"c2ln"}]}}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var chunks []*model.Response
		if json.Unmarshal(data, &chunks) != nil {
			return
		}
		var agg model.Aggregator
		var streamed, wantText strings.Builder
		var wantCalls []*model.Part
		var last *model.Response
		for _, c := range chunks {
			if c != nil {
				last = c
				if c.Content != nil {
					for _, p := range c.Content.Parts {
						switch {
						case p == nil:
						case p.Text != "":
							wantText.WriteString(p.Text)
						case p.FunctionCall != nil || p.FunctionResponse != nil:
							wantCalls = append(wantCalls, p)
						}
					}
				}
			}
			if p := agg.Add(c); p != nil {
				if !p.Partial || p.Content == nil || p.Content.Text() == "" || p.Content.Role != model.RoleModel || len(p.FunctionCalls()) != 0 {
					t.Fatalf("partial %+v", p)
				}
				streamed.WriteString(p.Content.Text())
			}
		}
		if streamed.String() != wantText.String() || agg.PartialText() != wantText.String() {
			t.Fatalf("streamed %q, partial text %q; the chunks said %q", streamed.String(), agg.PartialText(), wantText.String())
		}
		if agg.Emitted() != (wantText.Len() > 0) {
			t.Fatalf("Emitted = %v with text %q", agg.Emitted(), wantText.String())
		}
		final := agg.Final()
		if last == nil {
			if final != nil {
				t.Fatalf("final %+v from no chunk", final)
			}
			return
		}
		if final == nil || final.Partial || !final.TurnComplete || final.FinishReason != last.FinishReason || final.ErrorCode != last.ErrorCode {
			t.Fatalf("final %+v after last chunk %+v", final, last)
		}
		if final.Content.Text() != wantText.String() {
			t.Fatalf("final text %q, want %q", final.Content.Text(), wantText.String())
		}
		var calls []*model.Part
		if final.Content != nil {
			if final.Content.IsEmpty() || final.Content.Role != model.RoleModel {
				t.Fatalf("final content %+v", final.Content)
			}
			for _, p := range final.Content.Parts {
				if p == nil || p.Text == "" && p.FunctionCall == nil && p.FunctionResponse == nil {
					t.Fatalf("empty part in the final content %+v", final.Content)
				}
				if p.FunctionCall != nil || p.FunctionResponse != nil {
					calls = append(calls, p)
				}
			}
		}
		if len(calls) != len(wantCalls) {
			t.Fatalf("final has %d calls and responses, the stream %d", len(calls), len(wantCalls))
		}
		for i := range calls {
			if calls[i] != wantCalls[i] {
				t.Fatalf("call %d out of order", i)
			}
		}
	})
}
