package cooldown

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names exported by the breaker, labelled by model.
const (
	// MetricOpen is 1 while this worker sees the model's fleet-wide cooldown
	// open, else 0. It is computed at scrape time from the end of the last
	// cooldown the worker saw, so it falls back to 0 when the cooldown ends
	// even if no call of the model follows. Every worker exports it: take
	// max by (model) for the fleet. Label: model.
	MetricOpen = "agentfleet_cooldown_open"
	// MetricRejectedCalls counts model calls refused with an *OpenError
	// (the provider was not called) because the model was in cooldown.
	// Label: model.
	MetricRejectedCalls = "agentfleet_cooldown_rejected_calls_total"
)

// Metrics are the breaker's Prometheus instruments. A nil *Metrics records
// nothing. One Metrics serves every Model of a process; it is itself the
// prometheus.Collector that NewMetrics registers.
type Metrics struct {
	// RejectedCalls is MetricRejectedCalls {model}.
	RejectedCalls *prometheus.CounterVec

	openDesc *prometheus.Desc
	now      func() time.Time

	mu    sync.Mutex
	until map[string]time.Time
}

// NewMetrics creates the instruments and registers them with reg (nil: not
// registered, for tests). It panics if they are already registered with
// reg, like prometheus.MustRegister.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		RejectedCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricRejectedCalls,
			Help: "Model calls refused without calling the provider because the model was in cooldown.",
		}, []string{"model"}),
		openDesc: prometheus.NewDesc(MetricOpen,
			"1 while this worker sees the model's fleet-wide cooldown open, else 0.",
			[]string{"model"}, nil),
		now:   time.Now,
		until: map[string]time.Time{},
	}
	if reg != nil {
		reg.MustRegister(m)
	}
	return m
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.openDesc
	m.RejectedCalls.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	now := m.now()
	m.mu.Lock()
	for model, until := range m.until {
		v := 0.0
		if now.Before(until) {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(m.openDesc, prometheus.GaugeValue, v, model)
	}
	m.mu.Unlock()
	m.RejectedCalls.Collect(ch)
}

// Observe records the end of model's cooldown as the breaker last saw it (a
// zero or past time: not in cooldown). Model calls it after every store
// answer; MetricOpen is derived from it at scrape time.
func (m *Metrics) Observe(model string, until time.Time) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.until[model] = until
	m.mu.Unlock()
}

func (m *Metrics) rejected(model string) {
	if m != nil {
		m.RejectedCalls.WithLabelValues(model).Inc()
	}
}

// WithMetrics makes the breaker record into mt (nil: record nothing) and
// returns m. Call it before the first GenerateContent.
func (m *Model) WithMetrics(mt *Metrics) *Model {
	m.metrics = mt
	return m
}
