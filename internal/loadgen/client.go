package loadgen

import (
	"context"
	"fmt"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// producer submits support requests with pkg/client (the producer path:
// validation, Nats-Msg-Id = invocation id, PubAck).
type producer struct {
	c *client.Client
}

func newClient(e *env, sc streams.Config) (*producer, error) {
	c, err := client.New(e.js, e.nc, client.Config{
		RequestsStream: sc.RequestsStream, ResultsStream: sc.ResultsStream,
		RequestPrefix: sc.RequestPrefix, ResultPrefix: sc.ResultPrefix,
	})
	if err != nil {
		return nil, fmt.Errorf("loadgen: client: %w", err)
	}
	return &producer{c: c}, nil
}

// request is the support workload's request: refund one order.
func request(id, order string) *envelope.Request {
	return &envelope.Request{
		InvocationID: id, Agent: app.SupportAgentName,
		UserID: "user-" + id, SessionID: "session-" + id,
		Message: model.NewTextContent(model.RoleUser, "Please refund order "+order+", it arrived damaged."),
	}
}

func (p *producer) submit(ctx context.Context, _ int, id, order string) error {
	r, err := p.c.Send(ctx, request(id, order))
	if err != nil {
		return err
	}
	if r.Duplicate {
		return fmt.Errorf("loadgen: %s was a duplicate", id)
	}
	return nil
}
