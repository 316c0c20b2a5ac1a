package natssession_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/natssession"
)

// Regression (found in review, seventeenth session): The package documentation and ErrSessionTooLarge promise that an append
// that no longer fits in one KV entry fails with ErrSessionTooLarge (and
// stores nothing). With Config.MaxValueSize the bucket's limit is the
// stream's max message size, which the server checks against the value
// plus the KV Update's headers; AppendEvent compares the value alone, so a
// session a few dozen bytes under the limit is sent, refused by the server,
// and reported as an unclassified JetStream error.
func TestSessionTooLargeNearTheLimitIsErrSessionTooLarge(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	const limit = 4096
	svc, err := natssession.NewService(ctx, js, natssession.Config{MaxValueSize: limit})
	if err != nil {
		t.Fatal(err)
	}
	// Every text length from well under to over the limit, each on a
	// session of its own: each append either stores its event or fails
	// with ErrSessionTooLarge.
	for n := limit - 400; n <= limit; n++ {
		k := session.Key{App: "support", UserID: "u1", SessionID: fmt.Sprintf("s%d", n)}
		ev := &session.Event{InvocationID: "i1", Author: "support",
			Content: model.NewTextContent(model.RoleModel, strings.Repeat("x", n))}
		err := svc.AppendEvent(ctx, k, ev)
		if err != nil && !errors.Is(err, natssession.ErrSessionTooLarge) {
			t.Fatalf("append of a %d-byte text to an empty session = %v; want nil or ErrSessionTooLarge", n, err)
		}
	}
}
