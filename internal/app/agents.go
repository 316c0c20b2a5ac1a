package app

import (
	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/support"
	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// SupportAgentName is the demo agent the worker ships.
const SupportAgentName = "support"

// SupportAgent builds the order-support agent with the seed's wiring: the
// refund tool wrapped by pkg/idempotency (key fields order_id and
// amount_cents), the classifying tool-error callback, and the taxonomy's
// after-model and on-model-error callbacks. Its model-call budget is
// cfg.Model.MaxModelCalls, or config.DefaultSupportMaxModelCalls when that
// is 0 (pkg/agent would otherwise read 0 as its own default of 500).
func SupportAgent(cfg config.Worker, m model.Model, st *Stores, tm *taxonomy.Metrics, im *idempotency.Metrics, log zerolog.Logger) *agent.Agent {
	refund := idempotency.Wrap(support.RefundOrder(st.Orders, idempotency.KeyFromContext), st.Idempotency, refundIdempotencyOptions(cfg, im, log))
	opts := taxonomy.CallbackOptions{Model: m.Name(), Metrics: tm, Logger: log,
		// The worker dead-letters a degraded invocation for a replay (the
		// result's "queued"): the user is told so, not to try again, which
		// would run the request a second time under a new invocation id.
		DegradedMessage: func(c []agent.CompletedTool) string {
			return taxonomy.QueuedDegradedMessage(c, taxonomy.DefaultDescribeTool)
		}}
	maxCalls := cfg.Model.MaxModelCalls
	if maxCalls == 0 {
		maxCalls = config.DefaultSupportMaxModelCalls
	}
	return &agent.Agent{
		Name:          SupportAgentName,
		Model:         m,
		Instruction:   support.Instruction,
		Tools:         []tool.Tool{support.GetOrder(st.Orders), refund},
		MaxModelCalls: maxCalls,
		ToolTimeout:   cfg.Worker.ToolTimeout,
		Callbacks: agent.Callbacks{
			AfterModel:   []agent.AfterModelCallback{taxonomy.AfterModel(opts)},
			OnModelError: []agent.OnModelErrorCallback{taxonomy.OnModelError(opts)},
			OnToolError:  []agent.OnToolErrorCallback{agent.ClassifyToolError()},
		},
	}
}

// refundIdempotencyOptions are the options SupportAgent wraps the refund
// tool with; CheckDerived validates them before anything connects, since
// idempotency.Wrap panics on options it refuses.
func refundIdempotencyOptions(cfg config.Worker, im *idempotency.Metrics, log zerolog.Logger) idempotency.Options {
	return idempotency.Options{
		Agent:     SupportAgentName,
		KeyFields: support.RefundKeyFields,
		Lease:     cfg.Idempotency.Lease,
		Retention: cfg.Idempotency.Retention,
		DLQMaxAge: cfg.Streams.DLQMaxAge,
		Metrics:   im,
		Logger:    log,
	}
}
