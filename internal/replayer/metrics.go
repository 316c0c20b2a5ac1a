package replayer

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names of the replayer (drain mode serves them on /metrics).
const (
	// MetricReplayed counts replays published, by class and agent.
	MetricReplayed = "agentfleet_dlq_replayer_replayed_total"
	// MetricResults counts the results of replays, by class and status
	// (completed, dead_lettered, failed).
	MetricResults = "agentfleet_dlq_replayer_results_total"
	// MetricParked counts entries parked, by class.
	MetricParked = "agentfleet_dlq_replayer_parked_total"
	// MetricSkipped counts entries left in the DLQ, by class and reason
	// (not_auto_replayable, cooling_down, unusable_request, bad_entry).
	MetricSkipped = "agentfleet_dlq_replayer_skipped_total"
	// MetricHalts counts safety halts, by rule; rule "stores" (RuleStores)
	// counts the drain passes held because the fleet's workers record
	// other stores than the drain's.
	MetricHalts = "agentfleet_dlq_replayer_halts_total"
	// MetricPaused is 1 while replays of a model are paused by its cooldown.
	MetricPaused = "agentfleet_dlq_replayer_paused"
	// MetricEntries is the number of DLQ entries at the last drain pass, by
	// class and whether the drain replays them by itself (replayable
	// "true": replayed, or parked once replayed too often) or they wait
	// for a person ("false": a class never replayed automatically, and
	// entries the drain skips, too old or unusable).
	MetricEntries = "agentfleet_dlq_replayer_entries"
	// MetricPasses counts drain passes over the DLQ.
	MetricPasses = "agentfleet_dlq_replayer_passes_total"
)

// Metrics are the replayer's Prometheus metrics. A nil *Metrics records
// nothing.
type Metrics struct {
	// Replayed, Results, Parked, Skipped, Halts, Paused, Entries and Passes
	// are the metrics named by the constants of the same names.
	Replayed *prometheus.CounterVec
	Results  *prometheus.CounterVec // Results counts replay results (MetricResults).
	Parked   *prometheus.CounterVec // Parked counts parked entries (MetricParked).
	Skipped  *prometheus.CounterVec // Skipped counts entries left in the DLQ (MetricSkipped).
	Halts    *prometheus.CounterVec // Halts counts safety halts (MetricHalts).
	Paused   *prometheus.GaugeVec   // Paused is 1 while a model's replays are paused (MetricPaused).
	Entries  *prometheus.GaugeVec   // Entries is the DLQ entry count at the last pass (MetricEntries).
	Passes   prometheus.Counter     // Passes counts drain passes (MetricPasses).

	// pausedOn is what Paused says per model, kept across a drain's passes
	// (each pass is an Execute of its own): a pass that finds the
	// cooldown closed, or has no entry of the model left to hold back,
	// clears what an earlier pass set.
	pausedMu sync.Mutex
	pausedOn map[string]bool
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Replayed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricReplayed, Help: "DLQ entries replayed (request republished)."}, []string{"class", "agent"}),
		Results:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricResults, Help: "Results of replays by status."}, []string{"class", "status"}),
		Parked:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricParked, Help: "DLQ entries parked after too many replays."}, []string{"class"}),
		Skipped:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricSkipped, Help: "DLQ entries left in place, by reason."}, []string{"class", "reason"}),
		Halts:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricHalts, Help: "Replays halted by a safety rule."}, []string{"rule"}),
		Paused:   prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricPaused, Help: "1 while replays of a model wait for its cooldown."}, []string{"model"}),
		Entries:  prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricEntries, Help: "DLQ entries at the last drain pass."}, []string{"class", "replayable"}),
		Passes:   prometheus.NewCounter(prometheus.CounterOpts{Name: MetricPasses, Help: "Drain passes over the DLQ."}),
	}
	if reg != nil {
		reg.MustRegister(m.Replayed, m.Results, m.Parked, m.Skipped, m.Halts, m.Paused, m.Entries, m.Passes)
	}
	return m
}

// Init creates at 0 the Halts series of the rules a drain counts
// (RuleAutoHalt, RuleStores; its other rules stop the drain before it
// serves /metrics, or cannot trip in a drain). A drain restarted at the same
// address thus exports them from its start, and its first halt is an
// increase() from 0: a series that appeared at 1 while the previous
// process's series of the same rule was recent went unseen by
// AgentfleetDLQReplayHalted (configs/prometheus/alerts.yaml). Like worker
// Metrics.Init.
func (m *Metrics) Init() {
	if m == nil {
		return
	}
	for _, r := range []string{RuleAutoHalt, RuleStores} {
		m.Halts.WithLabelValues(r)
	}
}

func (m *Metrics) replayed(class, agent string) {
	if m != nil {
		m.Replayed.WithLabelValues(class, agent).Inc()
	}
}

func (m *Metrics) result(class, status string) {
	if m != nil {
		m.Results.WithLabelValues(class, status).Inc()
	}
}

func (m *Metrics) parked(class string) {
	if m != nil {
		m.Parked.WithLabelValues(class).Inc()
	}
}

func (m *Metrics) skipped(class, reason string) {
	if m != nil {
		m.Skipped.WithLabelValues(class, reason).Inc()
	}
}

func (m *Metrics) halt(rule string) {
	if m != nil {
		m.Halts.WithLabelValues(rule).Inc()
	}
}

// paused sets Paused for model. A model never paused gets no series.
func (m *Metrics) paused(model string, on bool) {
	if m == nil {
		return
	}
	m.pausedMu.Lock()
	defer m.pausedMu.Unlock()
	if m.pausedOn == nil {
		m.pausedOn = map[string]bool{}
	}
	if was, seen := m.pausedOn[model]; was == on && (seen || !on) {
		return
	}
	m.pausedOn[model] = on
	v := 0.0
	if on {
		v = 1
	}
	m.Paused.WithLabelValues(model).Set(v)
}

// unpauseAllBut clears Paused for every paused model not in keep: a drain
// pass with no entry of a model holds none of its replays back.
func (m *Metrics) unpauseAllBut(keep map[string]bool) {
	if m == nil {
		return
	}
	m.pausedMu.Lock()
	defer m.pausedMu.Unlock()
	for model, on := range m.pausedOn {
		if on && !keep[model] {
			m.pausedOn[model] = false
			m.Paused.WithLabelValues(model).Set(0)
		}
	}
}
