package agenttest

import "github.com/agentfleet/agentfleet/pkg/agent/model"

// Text returns a final text response (finish reason STOP).
func Text(s string) *model.Response {
	return &model.Response{
		Content:      model.NewTextContent(model.RoleModel, s),
		FinishReason: model.FinishReasonStop,
		TurnComplete: true,
	}
}

// Partial returns a streaming text delta.
func Partial(s string) *model.Response {
	return &model.Response{Content: model.NewTextContent(model.RoleModel, s), Partial: true}
}

// Call returns a response asking for one function call.
func Call(name string, args map[string]any) *model.Response {
	return Calls(&model.FunctionCall{Name: name, Args: args})
}

// Calls returns a response asking for several function calls at once.
func Calls(calls ...*model.FunctionCall) *model.Response {
	c := &model.Content{Role: model.RoleModel}
	for _, fc := range calls {
		c.Parts = append(c.Parts, &model.Part{FunctionCall: fc})
	}
	return &model.Response{Content: c, FinishReason: model.FinishReasonStop, TurnComplete: true}
}

// Reply returns a Step answering with responses.
func Reply(responses ...*model.Response) Step { return Step{Responses: responses} }

// Fail returns a Step that fails with err.
func Fail(err error) Step { return Step{Err: err} }
