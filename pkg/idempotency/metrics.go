package idempotency

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names.
const (
	// MetricClaims counts claims by outcome (acquired, reclaimed, completed,
	// in_progress, error).
	MetricClaims = "agentfleet_idempotency_claims_total"
	// MetricReplays counts calls answered from a stored result without
	// running the tool.
	MetricReplays = "agentfleet_idempotency_replays_total"
	// MetricArgsMismatch counts replays whose full arguments differ from the
	// stored call's (key fields equal, other fields not).
	MetricArgsMismatch = "agentfleet_idempotency_args_mismatch_total"
	// MetricInProgressConflicts counts calls that gave up waiting for another
	// live owner (*InProgressError).
	MetricInProgressConflicts = "agentfleet_idempotency_in_progress_conflicts_total"
	// MetricReleases counts released claims by reason (error, retryable).
	MetricReleases = "agentfleet_idempotency_releases_total"
	// MetricLeaseLost counts owners that lost their claim while or after
	// running the tool (the effect may have run twice).
	MetricLeaseLost = "agentfleet_idempotency_lease_lost_total"
	// MetricStoreErrors counts failed store operations by op.
	MetricStoreErrors = "agentfleet_idempotency_store_errors_total"
)

// Metrics are the wrapper's Prometheus counters, labelled by agent and tool.
// A nil *Metrics records nothing.
type Metrics struct {
	// Claims is MetricClaims {agent, tool, outcome}.
	Claims *prometheus.CounterVec
	// Replays is MetricReplays {agent, tool}.
	Replays *prometheus.CounterVec
	// ArgsMismatch is MetricArgsMismatch {agent, tool}.
	ArgsMismatch *prometheus.CounterVec
	// InProgressConflicts is MetricInProgressConflicts {agent, tool}.
	InProgressConflicts *prometheus.CounterVec
	// Releases is MetricReleases {agent, tool, reason}.
	Releases *prometheus.CounterVec
	// LeaseLost is MetricLeaseLost {agent, tool}.
	LeaseLost *prometheus.CounterVec
	// StoreErrors is MetricStoreErrors {agent, tool, op}.
	StoreErrors *prometheus.CounterVec
}

// NewMetrics creates the counters and registers them with reg (nil: not
// registered). Counters already registered with reg (a second NewMetrics on
// the same registry) are reused. It panics on any other registration error,
// like prometheus.MustRegister.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, append([]string{"agent", "tool"}, labels...))
		if reg == nil {
			return c
		}
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
					return existing
				}
			}
			panic(err)
		}
		return c
	}
	return &Metrics{
		Claims:              counter(MetricClaims, "Idempotency claims by outcome.", "outcome"),
		Replays:             counter(MetricReplays, "Tool calls answered from a stored result without running the tool."),
		ArgsMismatch:        counter(MetricArgsMismatch, "Replays whose full arguments differ from the stored call (only key fields matched)."),
		InProgressConflicts: counter(MetricInProgressConflicts, "Tool calls that gave up waiting for another live owner."),
		Releases:            counter(MetricReleases, "Claims released so the call may run again, by reason.", "reason"),
		LeaseLost:           counter(MetricLeaseLost, "Owners that lost their claim while or after running the tool."),
		StoreErrors:         counter(MetricStoreErrors, "Failed idempotency store operations, by op.", "op"),
	}
}

// Init creates at 0 the series of agent's tool that have no label but
// agent and tool (Replays, ArgsMismatch, InProgressConflicts, LeaseLost),
// for a tool wrapped with Options.Agent agent. A worker restarted at the
// same address thus exports them from its start, and its first lost lease
// is an increase() from 0: a series that appeared at 1 while the previous
// process's series of the same labels was recent went unseen by the alert
// (configs/prometheus/alerts.yaml).
func (m *Metrics) Init(agent, tool string) {
	if m == nil {
		return
	}
	for _, c := range []*prometheus.CounterVec{m.Replays, m.ArgsMismatch, m.InProgressConflicts, m.LeaseLost} {
		c.WithLabelValues(agent, tool)
	}
}

func (m *Metrics) claim(agent, tool string, o Outcome) {
	if m != nil {
		m.Claims.WithLabelValues(agent, tool, string(o)).Inc()
	}
}

func (m *Metrics) replay(agent, tool string) {
	if m != nil {
		m.Replays.WithLabelValues(agent, tool).Inc()
	}
}

func (m *Metrics) argsMismatch(agent, tool string) {
	if m != nil {
		m.ArgsMismatch.WithLabelValues(agent, tool).Inc()
	}
}

func (m *Metrics) inProgressConflict(agent, tool string) {
	if m != nil {
		m.InProgressConflicts.WithLabelValues(agent, tool).Inc()
	}
}

func (m *Metrics) release(agent, tool, reason string) {
	if m != nil {
		m.Releases.WithLabelValues(agent, tool, reason).Inc()
	}
}

func (m *Metrics) leaseLost(agent, tool string) {
	if m != nil {
		m.LeaseLost.WithLabelValues(agent, tool).Inc()
	}
}

func (m *Metrics) storeError(agent, tool, op string) {
	if m != nil {
		m.StoreErrors.WithLabelValues(agent, tool, op).Inc()
	}
}
