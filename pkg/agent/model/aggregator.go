package model

import "strings"

// Aggregator turns a provider's stream of chunks into the contract's shape:
// a Partial response per text delta, then one complete Response. Adapters
// feed every chunk to Add and yield what it returns (when non-nil), and
// yield Final once the stream ends cleanly.
type Aggregator struct {
	text    strings.Builder
	parts   []*Part
	last    *Response
	emitted bool
}

// Add accumulates chunk and returns the partial response to yield for it, or
// nil when the chunk carries no text (function calls and metadata are only
// delivered in the final response).
func (a *Aggregator) Add(chunk *Response) *Response {
	if chunk == nil {
		return nil
	}
	a.last = chunk
	var delta strings.Builder
	if chunk.Content != nil {
		for _, p := range chunk.Content.Parts {
			if p == nil {
				continue
			}
			if p.Text != "" {
				delta.WriteString(p.Text)
				a.text.WriteString(p.Text)
				continue
			}
			if p.FunctionCall != nil || p.FunctionResponse != nil {
				a.flushText()
				a.parts = append(a.parts, p)
			}
		}
	}
	if delta.Len() == 0 {
		return nil
	}
	a.emitted = true
	return &Response{
		Content:           NewTextContent(RoleModel, delta.String()),
		Partial:           true,
		ProviderRequestID: chunk.ProviderRequestID,
		ModelVersion:      chunk.ModelVersion,
	}
}

// Emitted reports whether any partial response was returned by Add.
func (a *Aggregator) Emitted() bool { return a.emitted }

// PartialText returns the text accumulated so far.
func (a *Aggregator) PartialText() string {
	var s strings.Builder
	for _, p := range a.parts {
		s.WriteString(p.Text)
	}
	s.WriteString(a.text.String())
	return s.String()
}

func (a *Aggregator) flushText() {
	if a.text.Len() > 0 {
		a.parts = append(a.parts, &Part{Text: a.text.String()})
		a.text.Reset()
	}
}

// Final returns the complete response: all text and function calls in order,
// with the finish reason, error fields, usage and ids of the last chunk. It
// returns nil if no chunk was added.
func (a *Aggregator) Final() *Response {
	if a.last == nil {
		return nil
	}
	a.flushText()
	out := *a.last
	out.Partial = false
	out.TurnComplete = true
	if len(a.parts) > 0 {
		out.Content = &Content{Role: RoleModel, Parts: a.parts}
	} else if a.last.Content != nil && a.last.Content.IsEmpty() {
		out.Content = nil
	}
	return &out
}
