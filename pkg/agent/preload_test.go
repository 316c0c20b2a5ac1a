package agent_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// countingLoads counts GetOrCreate calls on a real in-memory store.
type countingLoads struct {
	*session.Memory
	loads atomic.Int32
}

func (c *countingLoads) GetOrCreate(ctx context.Context, key session.Key) (*session.Session, error) {
	c.loads.Add(1)
	return c.Memory.GetOrCreate(ctx, key)
}

// A session read under the lock (RunRequest.Session) is where the runner
// starts: it does not load the session again, and it resumes from the
// events it was handed. A session of another key is ignored.
func TestRunnerStartsFromAPreloadedSession(t *testing.T) {
	f := newFixture(t, agenttest.Reply(agenttest.Text("Hi!")), agenttest.Reply(agenttest.Text("Hi again!")))
	c := &countingLoads{Memory: f.sessions}
	f.runner.Sessions = c
	ctx := context.Background()
	key := session.Key{App: "support", UserID: "u1", SessionID: "s1"}
	run := func(id string, pre *session.Session) *agent.Outcome {
		t.Helper()
		out, err := f.runner.Invoke(ctx, agent.RunRequest{InvocationID: id, UserID: "u1", SessionID: "s1",
			Message: model.NewTextContent(model.RoleUser, "hello"), Session: pre})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	pre, err := f.sessions.GetOrCreate(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if out := run("inv-1", pre); out.Final == nil || out.Final.Content.Text() != "Hi!" {
		t.Fatalf("outcome = %+v", out)
	}
	if n := c.loads.Load(); n != 0 {
		t.Fatalf("the runner loaded the session %d times despite the preloaded one", n)
	}

	// A preloaded session that already holds inv-1's final answer: the
	// runner resumes from it and runs nothing.
	done, err := f.sessions.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if out := run("inv-1", done); !out.Resumed || out.Final == nil || out.Final.Content.Text() != "Hi!" || f.model.Calls() != 1 {
		t.Fatalf("resume from the preloaded session: %+v, model calls %d", out, f.model.Calls())
	}

	other := &session.Session{Key: session.Key{App: "support", UserID: "u2", SessionID: "s9"}}
	run("inv-2", other)
	if n := c.loads.Load(); n != 1 {
		t.Fatalf("loads = %d after a preloaded session of another key, want 1 (it is ignored)", n)
	}
}
