package worker_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// session.Invocation.Error is documented as "a short, sanitised failure
// description", and `dlq-replayer show` prints it. The DLQ entry's reason
// was sanitised (dlq.Publisher) but the record held the raw error text, so
// a failure naming a DSN leaked its host and password into the record (and
// the on-call's terminal).
func TestInvocationRecordErrorIsSanitised(t *testing.T) {
	e := newEnv(t)
	secret := errors.New("connect postgres://admin:hunter2@orders-db.internal:5432/orders failed; host=10.1.2.3 password=hunter2")
	llm := agenttest.NewScriptedModel(agenttest.Fail(secret))
	e.startWorker("w1", e.supportAgent(llm), worker.Config{})
	e.publish(request("inv-secret", "s1", "hi"), nil)
	res := e.await("inv-secret")
	if res.Status == envelope.StatusCompleted {
		t.Fatalf("result %+v, want a failure", res)
	}
	for _, en := range e.dlqEntries() {
		if strings.Contains(en.Reason, "hunter2") {
			t.Fatalf("precondition: the DLQ reason leaks: %q", en.Reason)
		}
	}
	rec, err := e.invs.Get(context.Background(), "inv-secret")
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{"hunter2", "orders-db.internal", "10.1.2.3"} {
		if strings.Contains(rec.Error, leak) {
			t.Errorf("invocation record error leaks %q: %q", leak, rec.Error)
		}
	}
}
