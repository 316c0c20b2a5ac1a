package model

import "strings"

// Roles used in Content.Role. Function responses travel with RoleUser, as the
// Gemini API expects.
const (
	RoleUser  = "user"
	RoleModel = "model"
)

// Content is one turn of a conversation: a role and its ordered parts.
type Content struct {
	Role  string  `json:"role"`            // Role is RoleUser or RoleModel.
	Parts []*Part `json:"parts,omitempty"` // Parts are the turn's parts, in order.
}

// Part is one piece of a Content. Exactly one field is set.
type Part struct {
	Text             string            `json:"text,omitempty"`              // Text is a text part.
	FunctionCall     *FunctionCall     `json:"function_call,omitempty"`     // FunctionCall is a tool call requested by the model.
	FunctionResponse *FunctionResponse `json:"function_response,omitempty"` // FunctionResponse is a tool result sent back to the model.
	// ThoughtSignature is a provider's opaque token of its reasoning on this
	// part (Gemini's thoughtSignature, on a function call or the last
	// part). It is stored with the part and sent back unchanged in later
	// requests: Gemini 3 refuses a function call sent back without it.
	// Other providers leave it empty and ignore it.
	ThoughtSignature []byte `json:"thought_signature,omitempty"`
}

// FunctionCall is the model asking for a tool to run.
type FunctionCall struct {
	// ID pairs the call with its FunctionResponse. Providers that do not
	// assign one get an ID from the agent loop.
	ID   string         `json:"id,omitempty"`
	Name string         `json:"name"`           // Name is the tool to call.
	Args map[string]any `json:"args,omitempty"` // Args are the call's arguments.
}

// FunctionResponse is a tool's result (or error map) sent back to the model.
type FunctionResponse struct {
	ID       string         `json:"id,omitempty"` // ID is the ID of the FunctionCall this answers.
	Name     string         `json:"name"`         // Name is the tool that ran.
	Response map[string]any `json:"response"`     // Response is the tool's result or error map.
}

// NewTextContent returns a Content with a single text part.
func NewTextContent(role, text string) *Content {
	return &Content{Role: role, Parts: []*Part{{Text: text}}}
}

// Text concatenates the text parts of c. It returns "" for a nil Content.
func (c *Content) Text() string {
	if c == nil {
		return ""
	}
	var b strings.Builder // not s += p.Text: quadratic in the number of parts
	for _, p := range c.Parts {
		if p != nil {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// HasFunctionCalls reports whether c holds a function call (FunctionCalls
// without building the slice).
func (c *Content) HasFunctionCalls() bool {
	if c == nil {
		return false
	}
	for _, p := range c.Parts {
		if p != nil && p.FunctionCall != nil {
			return true
		}
	}
	return false
}

// HasFunctionResponses reports whether c holds a function response.
func (c *Content) HasFunctionResponses() bool {
	if c == nil {
		return false
	}
	for _, p := range c.Parts {
		if p != nil && p.FunctionResponse != nil {
			return true
		}
	}
	return false
}

// FunctionCalls returns the function calls in c, in order.
func (c *Content) FunctionCalls() []*FunctionCall {
	if c == nil {
		return nil
	}
	var out []*FunctionCall
	for _, p := range c.Parts {
		if p != nil && p.FunctionCall != nil {
			out = append(out, p.FunctionCall)
		}
	}
	return out
}

// FunctionResponses returns the function responses in c, in order.
func (c *Content) FunctionResponses() []*FunctionResponse {
	if c == nil {
		return nil
	}
	var out []*FunctionResponse
	for _, p := range c.Parts {
		if p != nil && p.FunctionResponse != nil {
			out = append(out, p.FunctionResponse)
		}
	}
	return out
}

// IsEmpty reports whether c has no parts carrying anything.
func (c *Content) IsEmpty() bool {
	if c == nil {
		return true
	}
	for _, p := range c.Parts {
		if p != nil && (p.Text != "" || p.FunctionCall != nil || p.FunctionResponse != nil) {
			return false
		}
	}
	return true
}
