package producercli_test

import (
	"bytes"
	"context"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/producercli"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review, nineteenth session): `producer send
// --invocation ID --wait` run again for a request the (real) worker refused
// as BAD_INPUT (its agent was not deployed yet): the worker wrote no
// invocation record, so the resend (the duplicate window has passed) runs
// and completes. But send --wait awaits with Await, which
// returns the stored result of the earlier refusal at once: the command
// prints "failed BAD_INPUT" and exits 4 (not completed) for a request that
// is running and completes (a refund done while the script reports a
// failure). RunBatch handles exactly this case (resend + AwaitAfter the
// stored sequence, eighteenth session); send --wait (and
// client.SubmitAndAwait) do not. Correct: a send that was not a duplicate
// waits for the result that follows a stored BAD_INPUT refusal, prints
// "done" and exits 0.
func TestSendWaitAfterABadInputRefusalReportsTheNewResult(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	release := make(chan struct{})
	held := model.Func{ModelName: "test", Generate: func(ctx context.Context, _ *model.Request, _ bool) iter.Seq2[*model.Response, error] {
		return func(yield func(*model.Response, error) bool) {
			select {
			case <-release:
			case <-ctx.Done():
				yield(nil, ctx.Err())
				return
			}
			yield(agenttest.Text("done"), nil)
		}
	}}
	f := newBadInputFleet(t, ctx, 200*time.Millisecond, held)
	send := func() (int, string) {
		var out, errb bytes.Buffer
		env := producercli.Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
		code := producercli.Run(ctx, []string{"--nats-url", f.srv.ClientURL(), "--timeout", "20s",
			"send", "--agent", "billing", "--user", "u1", "--session", "s1", "--invocation", "ticket-9", "--wait",
			"Why was I charged twice?"}, env)
		return code, "stdout " + strings.TrimSpace(out.String()) + "; stderr " + strings.TrimSpace(errb.String())
	}

	// The fleet does not run "billing" yet: refused as BAD_INPUT.
	stop := f.startWorker("support")
	if code, out := send(); code != producercli.ExitNotCompleted || !strings.Contains(out, "BAD_INPUT") {
		t.Fatalf("test premise: first send exit %d (%s), want 4 failed BAD_INPUT", code, out)
	}
	stop()

	// "billing" is deployed, the duplicate window has passed, the same
	// command is run again.
	f.startWorker("support", "billing")
	outliveDuplicateWindow(f.sc)
	// A tap on the result look-up (a direct get of the last result): the
	// model answers only once the command has looked, so the order is
	// fixed: look-up, then the new result.
	tap := natstest.Connect(t, f.srv)
	looked, err := tap.SubscribeSync("$JS.API.DIRECT.GET." + f.sc.ResultsStream + "." + f.sc.ResultSubject("ticket-9"))
	if err != nil {
		t.Fatal(err)
	}
	if err := tap.Flush(); err != nil {
		t.Fatal(err)
	}
	type result struct {
		code int
		out  string
	}
	done := make(chan result, 1)
	go func() {
		code, out := send()
		done <- result{code, out}
	}()
	if _, err := looked.NextMsgWithContext(ctx); err != nil {
		t.Fatalf("the command never looked its result up: %v", err)
	}
	close(release)
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		t.Fatal("send did not end")
	}
	// The invocation did complete.
	c := f.client()
	var final string
	for ctx.Err() == nil {
		if st, err := c.Lookup(ctx, "ticket-9"); err == nil && st.Status == envelope.StatusCompleted {
			final = string(st.Status)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r.code != producercli.ExitOK || !strings.Contains(r.out, "done") {
		t.Fatalf("send --wait of the resent request: exit %d (%s); the invocation ended %q; want exit 0 and its answer \"done\", not the earlier refusal",
			r.code, r.out, final)
	}
}
