package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// keyTooLong is a store that cannot address any key (as the NATS KV store
// refuses one longer than natskv.MaxKeyLen).
type keyTooLong struct{ idempotency.Store }

func (keyTooLong) Claim(context.Context, idempotency.ClaimRequest) (idempotency.Claim, error) {
	return idempotency.Claim{}, fmt.Errorf("natskv: claim: %w", idempotency.ErrKeyTooLong)
}

// Regression (found in review, nineteenth session): a key the store cannot
// address was wrapped as a *StoreError ("fail closed"), which matches
// ErrStoreUnavailable: the worker Naked the message as its own outage, for
// ever. It is no outage: the error escalates (the invocation is
// dead-lettered with it), and the tool does not run.
func TestKeyTooLongEscalatesWithoutRunning(t *testing.T) {
	var runs atomic.Int32
	w := idempotency.Wrap(&fnTool{name: "refund", fn: func(context.Context, map[string]any) (map[string]any, error) {
		runs.Add(1)
		return tool.OK(nil), nil
	}}, keyTooLong{idempotency.NewMemory()}, idempotency.Options{})
	res, err := w.Run(toolCtx("inv-k"), map[string]any{"order_id": "A1"})
	if !errors.Is(err, idempotency.ErrKeyTooLong) {
		t.Fatalf("Run = %v, %v; want an error matching ErrKeyTooLong", res, err)
	}
	if errors.Is(err, idempotency.ErrStoreUnavailable) || tool.IsInfrastructure(err) {
		t.Fatalf("Run error %v is an outage (ErrStoreUnavailable or infrastructure): the worker would Nak it for ever", err)
	}
	if m, cerr := agent.ClassifyToolError()(context.Background(), nil, nil, err); m != nil || cerr != nil {
		t.Fatalf("ClassifyToolError turned it into %v, %v; want it left to escalate", m, cerr)
	}
	if runs.Load() != 0 {
		t.Fatal("the tool ran without a claim")
	}
}
