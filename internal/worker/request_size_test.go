package worker_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/dlq"
	"github.com/agentfleet/agentfleet/pkg/envelope"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// A request too large for a dead letter to carry whole (dlq.MaxWholeRequest
// of the server's max_payload) is refused up front as BAD_INPUT, also when
// the worker's own limit is higher: had it run and failed, its dead letter
// would hold it cut, and a cut request can never be replayed. One byte
// less runs.
func TestRequestTooLargeForADeadLetterIsRefused(t *testing.T) {
	e := newEnv(t)
	llm := agenttest.NewScriptedModel(agenttest.Reply(agenttest.Text("done")))
	e.startWorker("w1", e.supportAgent(llm), worker.Config{MaxRequestBytes: 2 << 20})
	whole := dlq.MaxWholeRequest(e.nc.MaxPayload())
	sized := func(id string, n int) *envelope.Request {
		one, _ := json.Marshal(request(id, "s-"+id, "x"))
		r := request(id, "s-"+id, strings.Repeat("x", n-len(one)+1))
		if b, _ := json.Marshal(r); len(b) != n {
			t.Fatalf("built %d bytes, want %d", len(b), n)
		}
		return r
	}
	e.publish(sized("too-large", whole+1), nil)
	res := e.await("too-large")
	if res.Status != envelope.StatusFailed || res.ErrorClass != string(taxonomy.BadInput) {
		t.Fatalf("a request of %d bytes (a dead letter carries %d whole): %s %s, want failed BAD_INPUT", whole+1, whole, res.Status, res.ErrorClass)
	}
	e.publish(sized("fits", whole), nil)
	if res := e.await("fits"); res.Status != envelope.StatusCompleted {
		t.Fatalf("a request of %d bytes: %s %s, want completed", whole, res.Status, res.ErrorClass)
	}
}
