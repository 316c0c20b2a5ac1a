package model

import "strings"

// Aggregator turns a provider's stream of chunks into the contract's shape:
// a Partial response per text delta, then one complete Response. Adapters
// feed every chunk to Add and yield what it returns (when non-nil), and
// yield Final once the stream ends cleanly.
type Aggregator struct {
	text    strings.Builder
	textSig []byte // the last thought signature of the text being accumulated
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
				if len(p.ThoughtSignature) > 0 {
					a.textSig = p.ThoughtSignature // the text part's, once flushed
				}
				continue
			}
			if p.FunctionCall != nil || p.FunctionResponse != nil {
				a.flushText()
				a.parts = append(a.parts, p)
				continue
			}
			if len(p.ThoughtSignature) > 0 {
				// An empty part with a signature (the end of a Gemini
				// stream): it belongs to the text being accumulated, or
				// else to the part before it.
				a.sign(p.ThoughtSignature)
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
		a.parts = append(a.parts, &Part{Text: a.text.String(), ThoughtSignature: a.textSig})
		a.text.Reset()
		a.textSig = nil
	}
}

// sign keeps a thought signature that came on an empty part: for the text
// being accumulated, or on the last part (a call the adapter built for this
// stream) when there is none and that part has none; a part of its own would
// be an empty part, so with nowhere to go it is dropped.
func (a *Aggregator) sign(sig []byte) {
	if a.text.Len() > 0 {
		a.textSig = sig
		return
	}
	if n := len(a.parts); n > 0 && len(a.parts[n-1].ThoughtSignature) == 0 {
		a.parts[n-1].ThoughtSignature = sig
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
