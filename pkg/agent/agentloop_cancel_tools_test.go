package agent_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/natssession"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// Regression (found in review, twenty-second session): a tool step's
// function responses are stored past the invocation's cancellation, so a
// completed parallel call keeps its response and is not run again.
//
// With the NATS KV session store (a shipped backend without batches) a tool
// step's function responses are stored at once, with the invocation's
// context. When the invocation is cancelled while one parallel call still
// runs, the write of the completed call's response fails on the cancelled
// context: the response of a call that ran (a refund) is lost, and the
// resumed invocation runs that call a second time. runTools' doc promises
// "A failing branch therefore never loses the results of the others".
func TestCancelDuringParallelToolsKeepsCompletedResponses(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	svc, err := natssession.NewService(context.Background(), js, natssession.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var refunds atomic.Int32
	refundDone := make(chan struct{})
	refund := failingTool{name: "refund", run: func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		if refunds.Add(1) == 1 {
			defer close(refundDone)
		}
		return map[string]any{"status": "ok", "refunded": true}, nil
	}}
	slow := failingTool{name: "slow", run: func(tctx context.Context, _ map[string]any) (map[string]any, error) {
		select {
		case <-refundDone:
			cancel() // the worker gives up on the invocation (deadline, lease lost)
		case <-tctx.Done():
		}
		<-tctx.Done()
		return nil, tctx.Err()
	}}
	m := agenttest.NewScriptedModel(
		agenttest.Step{Responses: []*model.Response{{Content: &model.Content{Role: model.RoleModel, Parts: []*model.Part{
			{FunctionCall: &model.FunctionCall{ID: "c1", Name: "refund", Args: map[string]any{}}},
			{FunctionCall: &model.FunctionCall{ID: "c2", Name: "slow", Args: map[string]any{}}},
		}}}}},
	)
	r := &agent.Runner{Agent: &agent.Agent{Name: "support", Model: m, Tools: []tool.Tool{refund, slow}}, Sessions: svc}
	_, err = r.Invoke(ctx, agent.RunRequest{InvocationID: "inv-1", UserID: "u1", SessionID: "s1",
		Message: model.NewTextContent(model.RoleUser, "refund please")})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if se := (*agent.SessionError)(nil); errors.As(err, &se) {
		t.Fatalf("err = %v, want the context's error, not a failed session write", err)
	}
	if refunds.Load() != 1 {
		t.Fatalf("refund ran %d times, want 1", refunds.Load())
	}
	sess, err := svc.Get(context.Background(), session.Key{App: "support", UserID: "u1", SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	done := agent.CompletedToolsOf(sess.InvocationEvents("inv-1"))
	if len(done) != 1 || done[0].Name != "refund" {
		var names []string
		for _, d := range done {
			names = append(names, d.Name)
		}
		t.Fatalf("completed tools stored = %v, want the refund's response (stored events: %d)", names, len(sess.InvocationEvents("inv-1")))
	}
}

// Regression (found in review, twenty-second session): a streaming
// caller's tool step is stored past the cancellation too, so a tool that
// finished while the invocation was cancelled keeps its response.
//
// The same with a streaming caller (RunRequest.Stream: the tool step's
// event is stored at once) and the batching memory store: a tool that
// finishes its effect although the invocation was cancelled while it ran
// (the loop waits for it: "its effect may still be under way") succeeds,
// but its response is written with the cancelled context and lost, so a
// resumed run makes the refund again. The model response and the cut-off
// marker are written past the cancellation for this reason; the tool
// step's response is not.
func TestStreamingCancelKeepsFinishedToolResponse(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var refunds atomic.Int32
	refund := failingTool{name: "refund", run: func(context.Context, map[string]any) (map[string]any, error) {
		cancel() // the caller gives up while the refund is being booked
		refunds.Add(1)
		return map[string]any{"status": "ok", "refunded": true}, nil
	}}
	sessions := session.NewMemory()
	m := agenttest.NewScriptedModel(agenttest.Reply(agenttest.Call("refund", map[string]any{})))
	r := &agent.Runner{Agent: &agent.Agent{Name: "support", Model: m, Tools: []tool.Tool{refund}}, Sessions: sessions}
	_, err := agenttest.Collect(r.Run(ctx, agent.RunRequest{InvocationID: "inv-1", UserID: "u1", SessionID: "s1", Stream: true,
		Message: model.NewTextContent(model.RoleUser, "refund please")}))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if se := (*agent.SessionError)(nil); errors.As(err, &se) {
		t.Fatalf("err = %v, want the context's error, not a failed session write", err)
	}
	sess, err := sessions.Get(context.Background(), session.Key{App: "support", UserID: "u1", SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if done := agent.CompletedToolsOf(sess.InvocationEvents("inv-1")); len(done) != 1 {
		t.Fatalf("refund ran %d time(s) but the session holds %d completed call(s): a resumed run books it again", refunds.Load(), len(done))
	}
}
