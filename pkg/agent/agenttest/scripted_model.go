package agenttest

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// ErrScriptExhausted is returned by a ScriptedModel called more often than
// its script has steps.
var ErrScriptExhausted = errors.New("agenttest: scripted model has no more steps")

// Step is the scripted answer to one model call: the responses to yield in
// order, then Err if non-nil. Panic, if non-nil, makes the call panic with
// that value after yielding Responses.
type Step struct {
	Responses []*model.Response // Responses are yielded in order.
	Err       error             // Err, if non-nil, is yielded after Responses.
	Panic     any               // Panic, if non-nil, is panicked with after Responses.
}

// ScriptedModel is a model.Model that answers call n with Steps[n]. It is
// safe for concurrent use.
type ScriptedModel struct {
	ModelName string // ModelName is returned by Name ("scripted" by default).

	mu       sync.Mutex
	steps    []Step
	requests []*model.Request
	streams  []bool
}

// NewScriptedModel returns a model that answers with steps in order.
func NewScriptedModel(steps ...Step) *ScriptedModel {
	return &ScriptedModel{ModelName: "scripted", steps: steps}
}

// Push appends steps to the script.
func (m *ScriptedModel) Push(steps ...Step) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.steps = append(m.steps, steps...)
}

// Name implements model.Model.
func (m *ScriptedModel) Name() string { return m.ModelName }

// GenerateContent implements model.Model.
func (m *ScriptedModel) GenerateContent(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	m.mu.Lock()
	m.requests = append(m.requests, req.Clone())
	m.streams = append(m.streams, stream)
	var step Step
	ok := len(m.steps) > 0
	if ok {
		step = m.steps[0]
		m.steps = m.steps[1:]
	}
	m.mu.Unlock()
	return func(yield func(*model.Response, error) bool) {
		if !ok {
			yield(nil, fmt.Errorf("%w (call %d)", ErrScriptExhausted, m.Calls()))
			return
		}
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		for _, r := range step.Responses {
			cp := *r
			if !yield(&cp, nil) {
				return
			}
		}
		if step.Panic != nil {
			panic(step.Panic)
		}
		if step.Err != nil {
			yield(nil, step.Err)
		}
	}
}

// Calls returns how many times the model was called.
func (m *ScriptedModel) Calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.requests)
}

// Requests returns the requests the model received, in order.
func (m *ScriptedModel) Requests() []*model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*model.Request(nil), m.requests...)
}

// Remaining returns how many scripted steps are left.
func (m *ScriptedModel) Remaining() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.steps)
}
