package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/support"
	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
	"github.com/agentfleet/agentfleet/pkg/providers/sim"
)

// The shipped support agent wraps only its effectful tool: refund_order
// leaves an idempotency record, the read-only get_order none (and runs again
// each time it is called).
func TestSupportAgentWrapsOnlyTheEffectfulTool(t *testing.T) {
	store := idempotency.NewMemory()
	st := &app.Stores{Orders: support.NewMemoryOrders(support.DemoOrders()...), Idempotency: store}
	m, err := sim.New(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	a := app.SupportAgent(config.DefaultWorker(), m, st, nil, nil, zerolog.Nop())
	ctx := tool.WithContext(context.Background(), &tool.Context{InvocationID: "inv-1", Session: session.Key{App: "support", UserID: "u", SessionID: "s"}})
	byName := map[string]tool.Tool{}
	for _, tl := range a.Tools {
		byName[tl.Name()] = tl
	}
	get, refund := byName["get_order"], byName["refund_order"]
	if get == nil || refund == nil {
		t.Fatalf("tools %v", byName)
	}
	if _, err := get.Run(ctx, map[string]any{"order_id": "A-1001"}); err != nil {
		t.Fatal(err)
	}
	recs, err := store.Effects(ctx, "inv-1")
	if err != nil || len(recs) != 0 {
		t.Fatalf("get_order left records %+v (%v): a read-only tool must not be wrapped", recs, err)
	}
	if _, err := refund.Run(ctx, map[string]any{"order_id": "A-1001", "amount_cents": 100.0, "reason": "damaged"}); err != nil {
		t.Fatal(err)
	}
	recs, err = store.Effects(ctx, "inv-1")
	if err != nil || len(recs) != 1 || recs[0].Tool != "refund_order" || recs[0].State != idempotency.StateCompleted {
		t.Fatalf("refund_order records %+v (%v), want one completed", recs, err)
	}
}

// max_model_calls: 0 (or AGENTFLEET_MODEL_MAX_MODEL_CALLS=0) means the
// support agent's default, config.DefaultSupportMaxModelCalls (12), not
// pkg/agent's DefaultMaxModelCalls (500, what agent.Agent.WithDefaults
// would make of a 0 passed through): a looping invocation stops after 12
// paid model calls. A negative value (no limit at all in pkg/agent, only
// sensible in its tests) is rejected by Validate.
func TestMaxModelCallsZeroMeansTheSupportDefault(t *testing.T) {
	env := map[string]string{"AGENTFLEET_MODEL_MAX_MODEL_CALLS": "0"}
	cfg, err := config.LoadWorker(nil, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil)
	if err != nil {
		t.Fatalf("LoadWorker: %v", err)
	}
	st := &app.Stores{Orders: support.NewMemoryOrders(support.DemoOrders()...), Idempotency: idempotency.NewMemory()}
	m, err := sim.New(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	a := app.SupportAgent(cfg, m, st, nil, nil, zerolog.Nop())
	if got := a.WithDefaults().MaxModelCalls; got != 12 {
		t.Errorf("max_model_calls 0 (documented: the support default, 12): effective call budget %d", got)
	}
	cfg.Model.MaxModelCalls = 5
	if got := app.SupportAgent(cfg, m, st, nil, nil, zerolog.Nop()).WithDefaults().MaxModelCalls; got != 5 {
		t.Errorf("max_model_calls 5: effective call budget %d", got)
	}

	neg := config.DefaultWorker()
	neg.Embedded.Enabled = true
	if err := neg.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	neg.Model.MaxModelCalls = -1
	if err := neg.Validate(); err == nil {
		t.Errorf("max_model_calls -1 (no call budget at all: a looping model runs forever) passes Validate")
	}
}

// The shipped agent's degraded answer (a transient failure after the
// retries) says the request is queued, as the worker's dead-lettered result
// does: it told the user to try again, which would run the request a second
// time under a new invocation id (found by a newcomer run of --sim-faults).
func TestSupportAgentsDegradedAnswerSaysQueued(t *testing.T) {
	st := &app.Stores{Orders: support.NewMemoryOrders(support.DemoOrders()...), Idempotency: idempotency.NewMemory()}
	m, err := sim.New(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	a := app.SupportAgent(config.DefaultWorker(), m, st, nil, nil, zerolog.Nop())
	if len(a.Callbacks.OnModelError) != 1 {
		t.Fatalf("%d on-model-error callbacks, want the taxonomy's", len(a.Callbacks.OnModelError))
	}
	resp, err := a.Callbacks.OnModelError[0](context.Background(), nil, &model.Request{Model: m.Name()},
		&model.ProviderError{Provider: "sim", StatusCode: 503})
	if err != nil || resp == nil {
		t.Fatalf("callback = %v, %v; want a degraded answer for a 503", resp, err)
	}
	text := resp.Content.Text()
	if !strings.Contains(text, "queued") || strings.Contains(text, "try again") {
		t.Fatalf("degraded answer %q: want it to say the request is queued, not to try again", text)
	}
}

// worker.tool_timeout reaches the support agent; its default is
// agent.DefaultToolTimeout, so no shipped tool call can hang an invocation.
func TestSupportAgentToolTimeout(t *testing.T) {
	st := &app.Stores{Orders: support.NewMemoryOrders(support.DemoOrders()...), Idempotency: idempotency.NewMemory()}
	m, err := sim.New(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if config.DefaultToolTimeout != agent.DefaultToolTimeout {
		t.Fatalf("config.DefaultToolTimeout %v differs from agent.DefaultToolTimeout %v", config.DefaultToolTimeout, agent.DefaultToolTimeout)
	}
	cfg := config.DefaultWorker()
	if a := app.SupportAgent(cfg, m, st, nil, nil, zerolog.Nop()); a.ToolTimeout != agent.DefaultToolTimeout {
		t.Fatalf("default ToolTimeout = %v, want %v", a.ToolTimeout, agent.DefaultToolTimeout)
	}
	cfg.Worker.ToolTimeout = 5 * time.Second
	if a := app.SupportAgent(cfg, m, st, nil, nil, zerolog.Nop()); a.ToolTimeout != 5*time.Second {
		t.Fatalf("ToolTimeout = %v, want worker.tool_timeout's 5s", a.ToolTimeout)
	}
}
