package agent

import (
	"slices"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// buildContents turns session events into the model's conversation: partial
// and cut-off events are left out, so is a substituted (degraded) answer
// unless it asked for tools (their responses follow it and must answer its
// calls), and events without content are skipped.
//
// Every function call is answered in the turn that follows it, as the
// providers require: each call's response is moved there from wherever the
// session holds it (a resumed step records its responses in more than one
// event; an invocation resumed after another invocation of the session ran
// stores its responses after that one's events). A call that has no
// response at all (its invocation stopped mid-step and has not resumed) is
// answered with noResult, so the model knows the call was made and that
// its outcome is unknown. A response answers the call pairResponses pairs
// it with (by ID, then tool name and position, so a session stored before
// the loop made call IDs unique answers each call that shares an ID with
// its own response); a further response to an ID of the history answers nothing
// and is left out. Calls and responses without an ID keep their place,
// consecutive response turns merged, as before IDs were given.
func buildContents(events []*session.Event) []*model.Content {
	kept := make([]*session.Event, 0, len(events))
	calls := map[string]bool{}
	for _, e := range events {
		if e.Partial || e.CutOff || (e.Substituted && !e.Content.HasFunctionCalls()) || e.Content.IsEmpty() {
			continue
		}
		kept = append(kept, e)
		for _, p := range e.Content.Parts {
			if p != nil && p.FunctionCall != nil && p.FunctionCall.ID != "" {
				calls[p.FunctionCall.ID] = true
			}
		}
	}
	// The response each call of the history has, from a tool step's event.
	responses := pairResponses(kept, func(e *session.Event) bool { return onlyResponses(e.Content) })
	var out []*model.Content
	var last *model.Content
	lastIsResponses := false
	for _, e := range kept {
		if onlyResponses(e.Content) {
			// What is left once paired responses went to their calls.
			parts := make([]*model.Part, 0, len(e.Content.Parts))
			for _, p := range e.Content.Parts {
				if pairedResponse(p, calls) == nil {
					parts = append(parts, p)
				}
			}
			if len(parts) == 0 {
				continue
			}
			if lastIsResponses {
				last.Parts = append(last.Parts, parts...)
				continue
			}
			c := &model.Content{Role: roleOf(e), Parts: parts}
			out = append(out, c)
			last, lastIsResponses = c, true
			continue
		}
		c := &model.Content{Role: roleOf(e), Parts: append([]*model.Part(nil), e.Content.Parts...)}
		out = append(out, c)
		last, lastIsResponses = c, false
		var answers []*model.Part
		for _, fc := range c.FunctionCalls() {
			if fc.ID == "" {
				continue
			}
			p := responses[fc]
			if p == nil {
				p = &model.Part{FunctionResponse: &model.FunctionResponse{ID: fc.ID, Name: fc.Name, Response: noResult()}}
			}
			answers = append(answers, p)
		}
		if len(answers) > 0 {
			r := &model.Content{Role: model.RoleUser, Parts: answers}
			out = append(out, r)
			last, lastIsResponses = r, true
		}
	}
	return out
}

// noResult is the answer buildContents gives a call that has no response
// in the session.
func noResult() map[string]any {
	return tool.Error("no_result", false, "this call has no recorded result: the request that made it did not finish, so whether it took effect is unknown")
}

// onlyResponses reports whether c holds function responses and neither
// calls nor text: a tool step's event.
func onlyResponses(c *model.Content) bool {
	return c.HasFunctionResponses() && !c.HasFunctionCalls() && !hasText(c)
}

// pairedResponse returns p's function response when it answers a call of
// the history (an ID in calls), else nil.
func pairedResponse(p *model.Part, calls map[string]bool) *model.FunctionResponse {
	if p == nil || p.FunctionResponse == nil || p.FunctionResponse.ID == "" || !calls[p.FunctionResponse.ID] {
		return nil
	}
	return p.FunctionResponse
}

// roleOf is e's content role, or the role of its author when it has none.
func roleOf(e *session.Event) string {
	if e.Content.Role != "" {
		return e.Content.Role
	}
	if e.Author == session.AuthorUser {
		return model.RoleUser
	}
	return model.RoleModel
}

// pendingCalls returns the function calls of an invocation's events that have
// no response yet (pairResponses), in order: what a resumed invocation must
// still execute.
func pendingCalls(events []*session.Event) []*model.FunctionCall {
	answered := pairResponses(events, nil)
	var out []*model.FunctionCall
	for _, e := range events {
		for _, fc := range e.FunctionCalls() {
			if answered[fc] == nil {
				out = append(out, fc)
			}
		}
	}
	return out
}

// pairResponses pairs the function responses of events (of the events
// accept takes; all of them when accept is nil) with the calls they answer
// and returns each answered call's response part. A response answers a call
// with its ID that no earlier response answered (answeredBy picks which);
// a response that finds no such call answers nothing, so a call answered
// twice keeps its first response.
//
// The loop gives every call an ID of its own (assignCallIDs), so each ID
// has one call and position decides nothing. A session stored before it
// did may hold an ID many times ("call_0" in every response of an
// OpenAI-compatible server), where pairing by ID alone answered every such
// call with the first one's response (found in review, twentieth session).
func pairResponses(events []*session.Event, accept func(*session.Event) bool) map[*model.FunctionCall]*model.Part {
	open := map[string][]openCall{} // unanswered calls by ID, in order
	out := map[*model.FunctionCall]*model.Part{}
	// The model call of each invocation's latest event: the later events
	// of one call (SameCall) share the first one's index, so that its
	// calls are taken in the order the tool step answered them (mergeCalls
	// puts the earlier responses' calls first).
	lastCall := map[string]int{}
	for i, e := range events {
		if e == nil {
			continue
		}
		modelCall := i
		if prev, ok := lastCall[e.InvocationID]; ok && e.SameCall {
			modelCall = prev
		}
		lastCall[e.InvocationID] = modelCall
		if e.Content == nil {
			continue
		}
		take := accept == nil || accept(e)
		for _, p := range e.Content.Parts {
			switch {
			case p == nil:
			case p.FunctionCall != nil:
				id := p.FunctionCall.ID
				open[id] = append(open[id], openCall{modelCall: modelCall, invocation: e.InvocationID, call: p.FunctionCall})
			case p.FunctionResponse != nil && take:
				id := p.FunctionResponse.ID
				calls := open[id]
				if k := answeredBy(calls, e.InvocationID, p.FunctionResponse.Name); k >= 0 {
					out[calls[k].call] = p
					open[id] = slices.Delete(calls, k, k+1)
				}
			}
		}
	}
	return out
}

// openCall is a call pairResponses has not paired yet, made by the model
// call whose first event is events[modelCall].
type openCall struct {
	modelCall  int
	invocation string
	call       *model.FunctionCall
}

// answeredBy returns the index in calls (unanswered calls of one ID, in
// order) of the call that a response of invocation inv for tool name
// answers, or -1. The call is one of the latest model call that made one
// of inv's calls, else of the latest model call that made any (a tool step
// answers the calls of the step's model call, and a model call that yielded
// several complete responses is one step); of those calls, the first one
// for tool name, else the first one. The name tells apart the calls of a
// step that stored only some of its responses (a call that escalated has
// none; found in review, twentieth session: its response was given to the
// first call, so a resumed run ran the answered call again and never the
// failed one); position tells apart calls of one tool.
func answeredBy(calls []openCall, inv, name string) int {
	for _, own := range []bool{true, false} {
		first, named := -1, -1
		for j := len(calls) - 1; j >= 0; j-- {
			if own && calls[j].invocation != inv {
				continue
			}
			if first >= 0 && calls[j].modelCall != calls[first].modelCall {
				break
			}
			first = j
			if calls[j].call.Name == name {
				named = j
			}
		}
		if named >= 0 {
			return named
		}
		if first >= 0 {
			return first
		}
	}
	return -1
}

// hasText reports whether c has a part with text (Content.Text() != ""
// without building the string).
func hasText(c *model.Content) bool {
	if c == nil {
		return false
	}
	for _, p := range c.Parts {
		if p != nil && p.Text != "" {
			return true
		}
	}
	return false
}
