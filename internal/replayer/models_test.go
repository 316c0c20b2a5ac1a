package replayer

import (
	"context"
	"iter"
	"regexp"
	"strconv"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/providers/sim"
)

func simModel(t testing.TB, faults string) *sim.Model {
	t.Helper()
	f, err := sim.ParseFaults(faults)
	if err != nil {
		t.Fatal(err)
	}
	m, err := sim.New(sim.Config{Name: "support", Seed: 1, Faults: f})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// outage is the simulated provider during an outage: the SIMULATED model
// with faults server=1.0. Requests for an even order number get through
// get_order and refund_order first (the healthy simulator answers until the
// refund is done), so their refund ran before the failure; odd ones fail at
// the first call.
type outage struct {
	healthy, down *sim.Model
}

var orderNoRE = regexp.MustCompile(`A-(\d+)`)

// Name implements model.Model.
func (o *outage) Name() string { return o.down.Name() }

// GenerateContent implements model.Model.
func (o *outage) GenerateContent(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	even, refunded := false, false
	for _, c := range req.Contents {
		if c == nil {
			continue
		}
		if c.Role == model.RoleUser {
			if m := orderNoRE.FindStringSubmatch(c.Text()); m != nil {
				n, _ := strconv.Atoi(m[1])
				even = n%2 == 0
			}
		}
		for _, fr := range c.FunctionResponses() {
			if fr.Name == sim.ToolRefundOrder {
				refunded = true
			}
		}
	}
	if even && !refunded {
		return o.healthy.GenerateContent(ctx, req, stream)
	}
	return o.down.GenerateContent(ctx, req, stream)
}
