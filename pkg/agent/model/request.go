package model

import "github.com/google/jsonschema-go/jsonschema"

// Request is one model call: everything a provider adapter needs to build
// its wire request.
type Request struct {
	// Model is the provider's model name (e.g. "gemini-2.5-flash").
	Model string `json:"model,omitempty"`
	// SystemInstruction is the agent's instruction, sent as the system prompt.
	SystemInstruction string `json:"system_instruction,omitempty"`
	// Contents is the conversation so far, oldest first.
	Contents []*Content `json:"contents,omitempty"`
	// Tools declares the functions the model may call.
	Tools []*ToolDeclaration `json:"tools,omitempty"`
	// Config holds generation parameters.
	Config GenerateConfig `json:"config,omitzero"`
}

// ToolDeclaration describes one callable function to the model.
type ToolDeclaration struct {
	Name        string `json:"name"`                  // Name is the function's name.
	Description string `json:"description,omitempty"` // Description tells the model what the function does.
	// Parameters is the JSON schema of the argument object; nil means the
	// function takes no arguments.
	Parameters *jsonschema.Schema `json:"parameters,omitempty"`
}

// GenerateConfig holds optional generation parameters. Nil pointers and
// zero values mean "the provider's default".
type GenerateConfig struct {
	Temperature      *float32 `json:"temperature,omitempty"`        // Temperature is the sampling temperature.
	TopP             *float32 `json:"top_p,omitempty"`              // TopP is the nucleus-sampling probability mass.
	MaxOutputTokens  int32    `json:"max_output_tokens,omitempty"`  // MaxOutputTokens caps the response length in tokens.
	StopSequences    []string `json:"stop_sequences,omitempty"`     // StopSequences end generation when produced.
	ResponseMIMEType string   `json:"response_mime_type,omitempty"` // ResponseMIMEType requests an output format (e.g. "application/json").
	Seed             *int32   `json:"seed,omitempty"`               // Seed makes sampling reproducible where supported.
}

// Clone returns a copy of r whose slices can be appended to without
// touching r's. Contents and parts themselves are shared.
func (r *Request) Clone() *Request {
	if r == nil {
		return nil
	}
	c := *r
	c.Contents = append([]*Content(nil), r.Contents...)
	c.Tools = append([]*ToolDeclaration(nil), r.Tools...)
	c.Config.StopSequences = append([]string(nil), r.Config.StopSequences...)
	return &c
}
