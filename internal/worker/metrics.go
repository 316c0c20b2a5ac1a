package worker

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Metric names exported by the worker.
const (
	MetricMessages     = "agentfleet_worker_messages_total"
	MetricDeadLetters  = "agentfleet_dead_letters_total"
	MetricInFlight     = "agentfleet_worker_in_flight"
	MetricDuration     = "agentfleet_invocation_duration_seconds"
	MetricPages        = "agentfleet_page_events_total"
	MetricLoopSuspects = "agentfleet_loop_suspected_total"
)

// Metrics are the worker's Prometheus instruments. A nil *Metrics records
// nothing.
type Metrics struct {
	// Messages counts handled messages by agent and action (completed,
	// dead_lettered, failed, bad_input, nak_busy, nak_infra, nak_stopped,
	// nak_cooldown, nak_no_agent, duplicate, requeued). nak_no_agent: a
	// request whose invocation the fleet ran reached a worker without its
	// agent and was put back for a worker that runs it (a steady rate of
	// it: workers of that agent are missing). requeued: the session stayed
	// busy, so a copy went to the end of the requests stream and the
	// message was acked (Config.BusyRequeueAfter); a steady rate of it
	// means a hot session (one session sent requests faster than its
	// invocations finish).
	Messages *prometheus.CounterVec
	// DeadLetters counts DLQ entries by class and agent: each once the DLQ
	// stores it, under the class it stores (a redelivery whose publish of
	// it is a duplicate counts nothing; see Worker.countEntry for the one
	// case counted twice).
	DeadLetters *prometheus.CounterVec
	// InFlight is the number of invocations running now.
	InFlight prometheus.Gauge
	// Duration observes invocation wall time by agent and status.
	Duration *prometheus.HistogramVec
	// Pages counts page-level failures (AUTH, NOT_FOUND, BAD_REQUEST) by
	// class and agent, as DeadLetters counts their entries.
	Pages *prometheus.CounterVec
	// LoopSuspects counts CALL_BUDGET failures by agent, as DeadLetters
	// counts their entries.
	LoopSuspects *prometheus.CounterVec
}

// NewMetrics creates the instruments and registers them with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Messages: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricMessages,
			Help: "Request message deliveries handled, by agent and action (completed, dead_lettered, failed, bad_input, " +
				"nak_busy, nak_infra, nak_stopped, nak_cooldown, nak_no_agent: put back for a worker that runs its agent, duplicate, " +
				"requeued: a busy session's message copied to the end of the requests stream and acked)."}, []string{"agent", "action"}),
		DeadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricDeadLetters,
			Help: "Dead-letter entries published, by class and agent."}, []string{"class", "agent"}),
		InFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricInFlight,
			Help: "Invocations running in this worker."}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricDuration,
			Help: "Invocation wall time.", Buckets: prometheus.ExponentialBuckets(0.05, 2, 12)}, []string{"agent", "status"}),
		Pages: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricPages,
			Help: "Page-level failures (AUTH, NOT_FOUND, BAD_REQUEST)."}, []string{"class", "agent"}),
		LoopSuspects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricLoopSuspects,
			Help: "Invocations that exhausted their model-call budget."}, []string{"agent"}),
	}
	if reg != nil {
		reg.MustRegister(m.Messages, m.DeadLetters, m.InFlight, m.Duration, m.Pages, m.LoopSuspects)
	}
	return m
}

// Init creates at 0 the series the "any increase" alerts watch, for each of
// agents (the agents the worker runs): LoopSuspects, DeadLetters of every
// failure class, Pages of the page-level classes, and the BAD_INPUT and
// UNKNOWN DeadLetters of requests for an agent the worker does not run. A
// worker restarted at the same address thus exports them from its start,
// and its first event is an increase() from 0: a series that appeared at 1
// while the previous process's series of the same labels was recent went
// unseen (configs/prometheus/alerts.yaml). Like taxonomy Metrics.Init.
func (m *Metrics) Init(agents ...string) {
	if m == nil {
		return
	}
	for _, a := range agents {
		m.LoopSuspects.WithLabelValues(a)
		for _, c := range taxonomy.Classes() {
			m.DeadLetters.WithLabelValues(string(c), a)
			if taxonomy.PolicyFor(c).Page {
				m.Pages.WithLabelValues(string(c), a)
			}
		}
	}
	for _, c := range []taxonomy.Class{taxonomy.BadInput, taxonomy.Unknown} {
		m.DeadLetters.WithLabelValues(string(c), unknownAgentLabel)
	}
}

func (m *Metrics) message(agent, action string) {
	if m != nil {
		m.Messages.WithLabelValues(agent, action).Inc()
	}
}

func (m *Metrics) inFlight(d float64) {
	if m != nil {
		m.InFlight.Add(d)
	}
}

// deadLettered counts a DLQ entry of class for agent (a metrics label:
// Worker.agentLabel): DeadLetters, and Pages for a page-level class or
// LoopSuspects for CALL_BUDGET. Worker.countEntry says when.
func (m *Metrics) deadLettered(class taxonomy.Class, agent string) {
	if m == nil {
		return
	}
	m.deadLetter(string(class), agent)
	switch {
	case taxonomy.PolicyFor(class).Page:
		m.page(string(class), agent)
	case class == taxonomy.CallBudget:
		m.loopSuspect(agent)
	}
}

func (m *Metrics) deadLetter(class, agent string) {
	if m != nil {
		m.DeadLetters.WithLabelValues(class, agent).Inc()
	}
}

func (m *Metrics) page(class, agent string) {
	if m != nil {
		m.Pages.WithLabelValues(class, agent).Inc()
	}
}

func (m *Metrics) loopSuspect(agent string) {
	if m != nil {
		m.LoopSuspects.WithLabelValues(agent).Inc()
	}
}
