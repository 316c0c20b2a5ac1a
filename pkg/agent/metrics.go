package agent

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names exported by the agent loop.
const (
	MetricToolCalls        = "agentfleet_tool_calls_total"
	MetricToolErrors       = "agentfleet_tool_errors_total"
	MetricUnknownToolCalls = "agentfleet_unknown_tool_calls_total"
	MetricInvocations      = "agentfleet_invocations_total"
)

// Metrics are the agent loop's Prometheus counters. A nil *Metrics records
// nothing.
type Metrics struct {
	// ToolCalls counts tool calls by agent, tool and outcome (ok, error_map,
	// escalated, bad_arguments, bad_result: a result that does not encode
	// as JSON, unknown).
	ToolCalls *prometheus.CounterVec
	// ToolErrors counts Go errors and panics returned by tools, by agent,
	// tool and kind (error, panic).
	ToolErrors *prometheus.CounterVec
	// UnknownToolCalls counts calls naming an unregistered tool, by agent
	// and the requested name (a renamed tool shows up here). The name is
	// the model's choice, so the label is bounded: the first
	// MaxUnknownToolNames distinct names that look like tool names keep
	// their own series, the others are counted as UnknownToolOther (the log
	// line of each call has the name). ToolCalls labels these calls the
	// same way.
	UnknownToolCalls *prometheus.CounterVec
	// Invocations counts finished invocations by agent and outcome
	// (completed, failed, stopped).
	Invocations *prometheus.CounterVec

	mu      sync.Mutex
	unknown map[string]bool // unknown tool names with a series of their own
}

// MaxUnknownToolNames is how many distinct unregistered tool names a
// Metrics gives series of their own; UnknownToolOther labels the rest.
const MaxUnknownToolNames = 32

// UnknownToolOther is the tool label of an unregistered tool's calls once
// MaxUnknownToolNames names have series, and of a name that is not a tool
// name at all (empty, over 64 bytes, or other than letters, digits, '_',
// '-' and '.').
const UnknownToolOther = "_other"

// NewMetrics creates the counters and registers them with reg (nil: not
// registered, for tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		ToolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricToolCalls, Help: "Tool calls by agent, tool and outcome.",
		}, []string{"agent", "tool", "outcome"}),
		ToolErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricToolErrors, Help: "Go errors and panics returned by tools.",
		}, []string{"agent", "tool", "kind"}),
		UnknownToolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricUnknownToolCalls, Help: "Function calls naming an unregistered tool.",
		}, []string{"agent", "tool"}),
		Invocations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricInvocations, Help: "Finished invocations by agent and outcome.",
		}, []string{"agent", "outcome"}),
	}
	if reg != nil {
		reg.MustRegister(m.ToolCalls, m.ToolErrors, m.UnknownToolCalls, m.Invocations)
	}
	return m
}

func (m *Metrics) toolCall(agent, tool, outcome string) {
	if m != nil {
		m.ToolCalls.WithLabelValues(agent, tool, outcome).Inc()
	}
}

func (m *Metrics) toolError(agent, tool, kind string) {
	if m != nil {
		m.ToolErrors.WithLabelValues(agent, tool, kind).Inc()
	}
}

// unknownToolLabel is the bounded label for an unregistered tool name.
func (m *Metrics) unknownToolLabel(name string) string {
	if !toolNameLike(name) {
		return UnknownToolOther
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.unknown[name] {
		return name
	}
	if len(m.unknown) >= MaxUnknownToolNames {
		return UnknownToolOther
	}
	if m.unknown == nil {
		m.unknown = map[string]bool{}
	}
	m.unknown[name] = true
	return name
}

// toolNameLike reports whether s could be a tool's name as providers
// accept them: 1 to 64 letters, digits, '_', '-' or '.'.
func toolNameLike(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// unknownTool counts a call of an unregistered tool (in UnknownToolCalls
// and as ToolCalls' "unknown" outcome) under the bounded label.
func (m *Metrics) unknownTool(agent, tool string) {
	if m != nil {
		label := m.unknownToolLabel(tool)
		m.UnknownToolCalls.WithLabelValues(agent, label).Inc()
		m.ToolCalls.WithLabelValues(agent, label, "unknown").Inc()
	}
}

// unknownToolCall counts, in ToolCalls only, a call of an unregistered tool
// that ended with outcome before it was answered (interrupted: a resumed
// invocation answers it and counts it in UnknownToolCalls), under the
// bounded label.
func (m *Metrics) unknownToolCall(agent, tool, outcome string) {
	if m != nil {
		m.ToolCalls.WithLabelValues(agent, m.unknownToolLabel(tool), outcome).Inc()
	}
}

func (m *Metrics) invocation(agent, outcome string) {
	if m != nil {
		m.Invocations.WithLabelValues(agent, outcome).Inc()
	}
}
