package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review, seventeenth session): Send "validates req like the worker does". The worker refuses a request
// that is not UTF-8 (envelope.DecodeRequest: encoding/json "would read the
// bad bytes as U+FFFD and run another text than was sent"), but Send lets a
// message text (or metadata) with invalid UTF-8 through: Encode writes each
// bad byte as U+FFFD and the fleet runs another text than the caller gave,
// with no error. (A producer whose input is Latin-1, e.g. `producer send`
// from a Latin-1 terminal, gets exit 0 and a corrupted request.)
func TestSendRefusesTextThatIsNotUTF8(t *testing.T) {
	tg := streamstest.Embedded(t)
	c := newClient(t, tg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	for name, req := range map[string]*envelope.Request{
		"text": {InvocationID: "latin1-text", Agent: "support", UserID: "u1", SessionID: "s1",
			Message: model.NewTextContent(model.RoleUser, "refund caf\xe9 order")},
		"metadata": {InvocationID: "latin1-meta", Agent: "support", UserID: "u1", SessionID: "s1",
			Message:  model.NewTextContent(model.RoleUser, "hello"),
			Metadata: map[string]string{"customer": "Jos\xe9"}},
	} {
		rec, err := c.Send(ctx, req)
		var ie *envelope.InvalidError
		if !errors.As(err, &ie) {
			t.Errorf("%s: Send of a request that is not UTF-8 = %+v, %v; want an *envelope.InvalidError (the text sent would not be the caller's)", name, rec, err)
		}
	}
}
