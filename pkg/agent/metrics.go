package agent

import "github.com/prometheus/client_golang/prometheus"

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
	// escalated, bad_arguments, unknown).
	ToolCalls *prometheus.CounterVec
	// ToolErrors counts Go errors and panics returned by tools, by agent,
	// tool and kind (error, panic).
	ToolErrors *prometheus.CounterVec
	// UnknownToolCalls counts calls naming an unregistered tool, by agent
	// and the requested name (a renamed tool shows up here).
	UnknownToolCalls *prometheus.CounterVec
	// Invocations counts finished invocations by agent and outcome
	// (completed, failed, stopped).
	Invocations *prometheus.CounterVec
}

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

func (m *Metrics) unknownTool(agent, tool string) {
	if m != nil {
		m.UnknownToolCalls.WithLabelValues(agent, tool).Inc()
	}
}

func (m *Metrics) invocation(agent, outcome string) {
	if m != nil {
		m.Invocations.WithLabelValues(agent, outcome).Inc()
	}
}
