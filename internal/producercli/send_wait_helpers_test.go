package producercli_test

import (
	"bytes"
	"context"
	"iter"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/producercli"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// parcelFleet is a fleet (embedded NATS, one real worker) whose model
// answers every request "your parcel left today".
func parcelFleet(t *testing.T, ctx context.Context) *badInputFleet {
	t.Helper()
	answer := model.Func{ModelName: "test", Generate: func(context.Context, *model.Request, bool) iter.Seq2[*model.Response, error] {
		return func(yield func(*model.Response, error) bool) { yield(agenttest.Text("your parcel left today"), nil) }
	}}
	f := newBadInputFleet(t, ctx, 200*time.Millisecond, answer)
	f.startWorker("support")
	return f
}

// sendWait runs `producer send --invocation id --wait text` for session
// u1/s1 of the support agent against f and returns its exit code and
// output.
func sendWait(ctx context.Context, f *badInputFleet, id, text string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	env := producercli.Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	code = producercli.Run(ctx, []string{"--nats-url", f.srv.ClientURL(), "--timeout", "20s",
		"send", "--agent", "support", "--user", "u1", "--session", "s1", "--invocation", id, "--wait",
		text}, env)
	return code, out.String(), errb.String()
}
