package agent

import (
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// countModelCalls on stored events: a substitute marked SameCall is the
// answer to the cut-off call before it (one call); one without the mark,
// from a later run or stored before the mark was set, is a call of its own
// (an older same-call pair is counted twice, never once too few).
func TestCountModelCallsCutOffAndSubstitute(t *testing.T) {
	user := &session.Event{Author: session.AuthorUser, Content: model.NewTextContent(model.RoleUser, "refund A-1042")}
	cut := func() *session.Event {
		return &session.Event{Author: "support", Content: model.NewTextContent(model.RoleModel, "Your refund is on"), CutOff: true}
	}
	sub := func(sameCall bool) *session.Event {
		return &session.Event{Author: "support", Content: model.NewTextContent(model.RoleModel, "busy"), Substituted: true, SameCall: sameCall}
	}
	for _, tc := range []struct {
		name   string
		events []*session.Event
		want   int
	}{
		{"cut-off alone", []*session.Event{user, cut()}, 1},
		{"substitute of the cut-off call", []*session.Event{user, cut(), sub(true)}, 1},
		{"substitute of a later call", []*session.Event{user, cut(), sub(false)}, 2},
		{"two runs, each cut off and substituted", []*session.Event{user, cut(), sub(true), cut(), sub(true)}, 2},
	} {
		if got := countModelCalls(tc.events, "support"); got != tc.want {
			t.Errorf("%s: %d calls, want %d", tc.name, got, tc.want)
		}
	}
}
