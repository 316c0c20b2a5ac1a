package taxonomy

import "github.com/prometheus/client_golang/prometheus"

// Metric names, exported so dashboards and their tests can refer to them.
// Every series is labelled by model; failures also by class and channel.
// Raw messages never appear in labels.
const (
	// MetricModelCalls counts model calls (one per GenerateContent through
	// the retry decorator, however many attempts it made). Label: model.
	MetricModelCalls = "agentfleet_model_calls_total"
	// MetricProviderAttempts counts provider requests (attempts), first
	// attempts and retries alike. Label: model.
	MetricProviderAttempts = "agentfleet_model_provider_attempts_total"
	// MetricModelFailures counts classified failures. Labels: model, class,
	// channel (thrown|in_band).
	MetricModelFailures = "agentfleet_model_failures_total"
	// MetricRetryBudgetRefusals counts retries refused because the model's
	// retry budget was spent. Label: model.
	MetricRetryBudgetRefusals = "agentfleet_model_retry_budget_refusals_total"
)

// Label names.
const (
	LabelModel   = "model"
	LabelClass   = "class"
	LabelChannel = "channel"
)

// unknownModel labels series whose model name is not known.
const unknownModel = "unknown"

// Metrics holds the taxonomy's Prometheus counters. A nil *Metrics records
// nothing, so components can take one optionally.
type Metrics struct {
	// ModelCalls is MetricModelCalls.
	ModelCalls *prometheus.CounterVec
	// ProviderAttempts is MetricProviderAttempts.
	ProviderAttempts *prometheus.CounterVec
	// Failures is MetricModelFailures.
	Failures *prometheus.CounterVec
	// RetryBudgetRefusals is MetricRetryBudgetRefusals.
	RetryBudgetRefusals *prometheus.CounterVec
}

// NewMetrics creates the counters and registers them with reg. A nil reg
// leaves them unregistered (for tests). Library code never registers with
// the global default registry on its own; pass prometheus.DefaultRegisterer
// explicitly if that is what you want. It panics if the names are already
// registered with reg, like prometheus.MustRegister.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		ModelCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricModelCalls,
			Help: "Model calls by model (a call may make several provider attempts).",
		}, []string{LabelModel}),
		ProviderAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricProviderAttempts,
			Help: "Provider requests (first attempts and retries) by model.",
		}, []string{LabelModel}),
		Failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricModelFailures,
			Help: "Classified model-call failures by model, class and channel (thrown|in_band).",
		}, []string{LabelModel, LabelClass, LabelChannel}),
		RetryBudgetRefusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricRetryBudgetRefusals,
			Help: "Retries refused because the model's retry budget was spent.",
		}, []string{LabelModel}),
	}
	if reg != nil {
		reg.MustRegister(m.ModelCalls, m.ProviderAttempts, m.Failures, m.RetryBudgetRefusals)
	}
	return m
}

func modelLabel(name string) string {
	if name == "" {
		return unknownModel
	}
	return name
}

// ModelCall counts one model call of modelName.
func (m *Metrics) ModelCall(modelName string) {
	if m == nil {
		return
	}
	m.ModelCalls.WithLabelValues(modelLabel(modelName)).Inc()
}

// ProviderAttempt counts one provider attempt of modelName.
func (m *Metrics) ProviderAttempt(modelName string) {
	if m == nil {
		return
	}
	m.ProviderAttempts.WithLabelValues(modelLabel(modelName)).Inc()
}

// RetryBudgetRefusal counts one retry refused by modelName's retry budget.
func (m *Metrics) RetryBudgetRefusal(modelName string) {
	if m == nil {
		return
	}
	m.RetryBudgetRefusals.WithLabelValues(modelLabel(modelName)).Inc()
}

// Failure counts f by model, class and channel. Cancellations are not
// failures and are not counted; a class with no row in the table is
// counted as UNKNOWN so a stray value cannot grow the label set.
func (m *Metrics) Failure(f Failure) {
	if m == nil || f.Class == Canceled {
		return
	}
	c := f.Class
	if !c.Valid() {
		c = Unknown
	}
	ch := f.Channel
	if ch != ChannelInBand {
		ch = ChannelThrown
	}
	m.Failures.WithLabelValues(modelLabel(f.Model), string(c), string(ch)).Inc()
}

// Init creates modelName's series at 0: its calls, attempts, retry-budget
// refusals and a failure series for every class (but Canceled, which is
// never counted) on both channels. A worker calls it at start, so a
// failure after a restart is an increase() from 0 that every "any
// increase" alert sees, even where the previous process's series of the
// same labels (the same instance) is still in Prometheus's recent past.
func (m *Metrics) Init(modelName string) {
	if m == nil {
		return
	}
	l := modelLabel(modelName)
	m.ModelCalls.WithLabelValues(l)
	m.ProviderAttempts.WithLabelValues(l)
	m.RetryBudgetRefusals.WithLabelValues(l)
	for _, c := range Classes() {
		if c == Canceled {
			continue
		}
		for _, ch := range []Channel{ChannelThrown, ChannelInBand} {
			m.Failures.WithLabelValues(l, string(c), string(ch))
		}
	}
}
