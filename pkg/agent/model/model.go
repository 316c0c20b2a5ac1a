package model

import (
	"context"
	"iter"
)

// Model is a language model behind some provider.
//
// GenerateContent makes one model call. Without streaming the sequence yields
// exactly one (*Response, nil) or one (nil, error). With streaming it yields
// Partial deltas and then one complete non-partial Response; an error ends
// the sequence, possibly after some partial output was yielded. Callers stop
// early by breaking out of the range loop; implementations must honour that
// and must honour ctx.
type Model interface {
	// Name is the model's name as configured (e.g. "gemini-2.5-flash").
	Name() string
	// GenerateContent makes one model call.
	GenerateContent(ctx context.Context, req *Request, stream bool) iter.Seq2[*Response, error]
}

// Func adapts a plain function to the Model interface, for tests and small
// decorators.
type Func struct {
	ModelName string                                                                           // ModelName is returned by Name.
	Generate  func(ctx context.Context, req *Request, stream bool) iter.Seq2[*Response, error] // Generate implements GenerateContent.
}

// Name returns f.ModelName.
func (f Func) Name() string { return f.ModelName }

// GenerateContent calls f.Generate.
func (f Func) GenerateContent(ctx context.Context, req *Request, stream bool) iter.Seq2[*Response, error] {
	return f.Generate(ctx, req, stream)
}

// Single returns a sequence that yields exactly one (resp, err) pair. It is
// the usual way for a non-streaming adapter to build its result.
func Single(resp *Response, err error) iter.Seq2[*Response, error] {
	return func(yield func(*Response, error) bool) {
		if err != nil {
			yield(nil, err)
			return
		}
		yield(resp, nil)
	}
}
