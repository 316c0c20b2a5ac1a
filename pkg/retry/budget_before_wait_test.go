package retry_test

import (
	"context"
	"errors"
	"iter"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/retry"
)

// Regression (found in review, twenty-fifth session): with PerAttempt
// accounting the budget was charged for a retry only after its backoff or
// the server's hint (up to MaxHint, 30 s by default, plus a spread), so an
// invocation whose budget was spent slept the whole wait only to end with
// CALL_BUDGET. The charge now comes before the wait: no wait when it is
// refused, and the charge is given back when the wait is cut short.
func TestPerAttemptBudgetRefusedBeforeTheWait(t *testing.T) {
	llm := agenttest.NewScriptedModel(agenttest.Fail(server503()), agenttest.Reply(agenttest.Text("ok")))
	m, fx := newModel(t, llm, retry.Config{MaxAttempts: 3, Accounting: retry.PerAttempt})
	b := model.NewCallBudget(1)
	_ = b.Charge() // the loop's charge for the call: the budget is spent
	_, err := collect(m.GenerateContent(model.WithCallBudget(context.Background(), b), req, false))
	var gu *retry.GaveUpError
	if !errors.As(err, &gu) || gu.Reason != retry.ReasonCallBudget {
		t.Fatalf("want GaveUpError(call_budget), got %v", err)
	}
	if w := fx.clock.Waits(); len(w) != 0 {
		t.Fatalf("waited %v before a retry the budget refused; want no wait", w)
	}

	// A wait cut short gives the retry's charge back.
	llm = agenttest.NewScriptedModel(agenttest.Fail(server503()), agenttest.Reply(agenttest.Text("ok")))
	b = model.NewCallBudget(5)
	_ = b.Charge()
	ctx, cancel := context.WithCancel(model.WithCallBudget(context.Background(), b))
	llm2 := &cancelAfterFirst{Model: llm, cancel: cancel}
	m, _ = newModel(t, llm2, retry.Config{MaxAttempts: 3, Accounting: retry.PerAttempt})
	_, err = collect(m.GenerateContent(ctx, req, false))
	if !errors.As(err, &gu) || gu.Reason != retry.ReasonCanceled {
		t.Fatalf("want GaveUpError(canceled), got %v", err)
	}
	if b.Used() != 1 {
		t.Fatalf("budget used %d after a retry whose wait was cancelled; want 1 (the call's own charge)", b.Used())
	}
}

// cancelAfterFirst cancels the caller's context when its first call ends.
type cancelAfterFirst struct {
	model.Model
	cancel func()
}

func (c *cancelAfterFirst) GenerateContent(ctx context.Context, r *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		for resp, err := range c.Model.GenerateContent(ctx, r, stream) {
			if !yield(resp, err) {
				break
			}
		}
		c.cancel()
	}
}
