package agent

import (
	"errors"
	"fmt"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// Defaults for Agent fields left zero.
const (
	// DefaultMaxModelCalls is ADK Java's RunConfig.maxLlmCalls default.
	DefaultMaxModelCalls = 500
	// DefaultMaxParallelTools bounds how many function calls of one model
	// response run at once.
	DefaultMaxParallelTools = 4
	// DefaultToolTimeout bounds one tool call (Agent.ToolTimeout).
	DefaultToolTimeout = time.Minute
)

// Agent is an LLM agent: a model, an instruction, tools and callbacks.
// Configure it as a struct literal, then call WithDefaults and Validate (the
// Runner does both).
type Agent struct {
	// Name identifies the agent; it is the author of its events and the app
	// name of its sessions. Required.
	Name string
	// Model answers the agent's model calls. Required.
	Model model.Model
	// Instruction is the system instruction.
	Instruction string
	// Tools the model may call. Names must be unique.
	Tools []tool.Tool
	// Callbacks are the agent's own hooks.
	Callbacks Callbacks
	// Plugins are hooks that run before the agent's own, in order.
	Plugins []*Plugin
	// MaxModelCalls caps model calls per invocation (only real model calls
	// count: a before-model callback that short-circuits does not). 0 means
	// DefaultMaxModelCalls (500); a negative value means no limit, which is
	// only sensible in tests: it removes the protection against a model that
	// calls tools forever.
	MaxModelCalls int
	// MaxParallelTools bounds concurrent tool calls of one model response.
	// 0 means DefaultMaxParallelTools; 1 runs them one after the other.
	MaxParallelTools int
	// ToolTimeout is the longest one tool call may run (its callbacks not
	// counted): the context passed to the tool's Run ends then, and a tool
	// that returns an error after that fails with a *ToolTimeoutError,
	// which matches context.DeadlineExceeded, so the tool-error callback
	// answers the model {"reason":"timeout","retryable":true}, as for a
	// downstream timeout. A tool that ignores its context is waited for,
	// not abandoned: its effect may still be under way. 0 means
	// DefaultToolTimeout (1m); a negative value means no limit but the
	// invocation's context.
	ToolTimeout time.Duration
	// Config is passed to every model call.
	Config model.GenerateConfig
}

// WithDefaults returns a copy of a with zero fields set to their defaults.
func (a Agent) WithDefaults() Agent {
	if a.MaxModelCalls == 0 {
		a.MaxModelCalls = DefaultMaxModelCalls
	}
	if a.MaxParallelTools <= 0 {
		a.MaxParallelTools = DefaultMaxParallelTools
	}
	if a.ToolTimeout == 0 {
		a.ToolTimeout = DefaultToolTimeout
	}
	return a
}

// Validate reports a configuration the loop cannot run.
func (a Agent) Validate() error {
	var errs []error
	if a.Name == "" {
		errs = append(errs, errors.New("agent: Name is required"))
	}
	if a.Model == nil {
		errs = append(errs, errors.New("agent: Model is required"))
	}
	seen := map[string]bool{}
	for i, t := range a.Tools {
		if t == nil {
			errs = append(errs, fmt.Errorf("agent: Tools[%d] is nil", i))
			continue
		}
		if t.Name() == "" {
			errs = append(errs, fmt.Errorf("agent: Tools[%d] has no name", i))
		} else if err := tool.CheckName(t.Name()); err != nil {
			// A name the providers refuse fails every model request of
			// the agent (each carries every declaration), not only the
			// calls of this tool: refuse it at start.
			errs = append(errs, fmt.Errorf("agent: Tools[%d]: %w", i, err))
		}
		if seen[t.Name()] {
			errs = append(errs, fmt.Errorf("agent: tool %q registered twice", t.Name()))
		}
		seen[t.Name()] = true
	}
	return errors.Join(errs...)
}

func (a *Agent) tool(name string) tool.Tool {
	for _, t := range a.Tools {
		if t.Name() == name {
			return t
		}
	}
	return nil
}

// ToolNames returns the names of the agent's tools, in order.
func (a *Agent) ToolNames() []string {
	out := make([]string, 0, len(a.Tools))
	for _, t := range a.Tools {
		out = append(out, t.Name())
	}
	return out
}
