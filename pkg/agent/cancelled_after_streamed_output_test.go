package agent_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// streamThenCancelModel streams a partial text and then its complete
// response, but the invocation is cancelled while the partial was with
// the caller (a shutdown, a client that hung up): the provider had already
// sent the rest (a buffered stream), so the call ends cleanly.
type streamThenCancelModel struct{ cancel context.CancelFunc }

func (m streamThenCancelModel) Name() string { return "scripted" }
func (m streamThenCancelModel) GenerateContent(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		if !yield(&model.Response{Content: model.NewTextContent(model.RoleModel, "Your refund of 5.00 "), Partial: true}, nil) {
			return
		}
		m.cancel()
		yield(&model.Response{Content: model.NewTextContent(model.RoleModel, "Your refund of 5.00 was issued."),
			FinishReason: model.FinishReasonStop, TurnComplete: true}, nil)
	}
}

// Regression (found in review, twentieth session): text that reached a
// streaming caller belongs in the session whatever ended the invocation,
// and the loop stores a cut-off stream's text with a context that outlives
// the cancellation for exactly that reason. A response that arrived whole
// just as the invocation was cancelled was stored with the cancelled
// context instead, so the write failed: the caller saw "Your refund of
// 5.00 ..." and the session held nothing of it (the resumed run asks the
// model again and may say something else; the held user message was lost
// with it too). The run must still end with an error matching
// context.Canceled.
func TestCancelledAfterStreamedOutputKeepsTheShownText(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sessions := session.NewMemory()
	r := &agent.Runner{
		Agent:    &agent.Agent{Name: "support", Model: streamThenCancelModel{cancel: cancel}},
		Sessions: sessions,
	}
	var shown strings.Builder
	var runErr error
	for ev, err := range r.Run(ctx, agent.RunRequest{
		InvocationID: "inv-c1", UserID: "u1", SessionID: "s1", Stream: true,
		Message: model.NewTextContent(model.RoleUser, "refund A-1042"),
	}) {
		if err != nil {
			runErr = err
			continue
		}
		if ev.Partial {
			shown.WriteString(ev.Content.Text())
		}
	}
	if shown.Len() == 0 {
		t.Fatal("no partial output reached the caller")
	}
	if !errors.Is(runErr, context.Canceled) {
		t.Errorf("a cancelled invocation ended with %v, which does not match context.Canceled", runErr)
	}
	s, err := sessions.Get(context.Background(), session.Key{App: "support", UserID: "u1", SessionID: "s1"})
	if err != nil {
		t.Fatalf("session: %v (nothing was stored)", err)
	}
	var stored strings.Builder
	for _, e := range s.Events {
		if e.Author == "support" {
			stored.WriteString(e.Content.Text())
		}
	}
	if !strings.Contains(stored.String(), strings.TrimSpace(shown.String())) {
		t.Fatalf("the caller was shown %q, but the session holds %q of the agent's (events: %d; run error: %v)", shown.String(), stored.String(), len(s.Events), runErr)
	}
}
