package agent

import (
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// buildContents turns session events into the model's conversation: partial
// and cut-off events are left out, so is a substituted (degraded) answer
// unless it asked for tools (their responses follow it and must answer its
// calls), events without content are skipped, and
// consecutive function-response events (a resumed step records its responses
// in more than one event) are merged into one turn so every function call is
// answered in the turn that follows it.
func buildContents(events []*session.Event) []*model.Content {
	var out []*model.Content
	var last *model.Content
	lastIsResponses := false
	for _, e := range events {
		if e.Partial || e.CutOff || (e.Substituted && !e.Content.HasFunctionCalls()) || e.Content.IsEmpty() {
			continue
		}
		onlyResponses := e.Content.HasFunctionResponses() && !e.Content.HasFunctionCalls() && !hasText(e.Content)
		if onlyResponses && lastIsResponses {
			last.Parts = append(last.Parts, e.Content.Parts...)
			continue
		}
		c := &model.Content{Role: e.Content.Role, Parts: append([]*model.Part(nil), e.Content.Parts...)}
		if c.Role == "" {
			c.Role = model.RoleModel
			if e.Author == session.AuthorUser {
				c.Role = model.RoleUser
			}
		}
		out = append(out, c)
		last, lastIsResponses = c, onlyResponses
	}
	return out
}

// pendingCalls returns the function calls of an invocation's events that have
// no response yet, in order: what a resumed invocation must still execute.
func pendingCalls(events []*session.Event) []*model.FunctionCall {
	answered := map[string]bool{}
	for _, e := range events {
		for _, fr := range e.FunctionResponses() {
			answered[fr.ID] = true
		}
	}
	var out []*model.FunctionCall
	for _, e := range events {
		for _, fc := range e.FunctionCalls() {
			if !answered[fc.ID] {
				out = append(out, fc)
			}
		}
	}
	return out
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
