package replayer

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// putEntry stores e on the DLQ with exactly the headers h (nil: none), as
// an entry written by something other than dlq.Publisher (moved or restored
// by hand, another client) may have.
func (x *fx) putEntry(ctx context.Context, e *dlq.Entry, h nats.Header) {
	x.t.Helper()
	data, _ := request(e.InvocationID, "A-1").Encode()
	e.SetRequest(data)
	b, err := e.Encode()
	if err != nil {
		x.t.Fatal(err)
	}
	m := &nats.Msg{Subject: x.sc.DLQSubject(e.Class, e.Agent), Data: b, Header: h}
	if _, err := x.js.PublishMsg(ctx, m); err != nil {
		x.t.Fatal(err)
	}
}

// --invocation, show and the walk select by the invocation id of the entry
// itself (the one a replay republishes), not only by the
// Agent-Invocation-Id header: an entry without the header was listed by
// list but show said "invocation not found" and list/replay --invocation
// selected nothing, and an entry whose header names another invocation was
// selected (and replayed) for that other one.
func TestInvocationFilterReadsTheEntry(t *testing.T) {
	x := newFx(t, true)
	ctx := ctxT(t)
	now := time.Now().UTC()
	entry := func(id string) *dlq.Entry {
		return &dlq.Entry{V: dlq.Version, InvocationID: id, Agent: "support", Class: "SERVER", Reason: "model 503",
			FailedAt: now, FirstFailedAt: now.Add(-time.Hour), Model: "sim:support"}
	}
	x.putEntry(ctx, entry("nohdr"), nil)
	odd := nats.Header{}
	odd.Set(dlq.HeaderInvocationID, "other")
	x.putEntry(ctx, entry("real"), odd)

	sh := x.run(ctx, nil, "show", "nohdr").must(t, ExitOK, "show of an entry without headers")
	contains(t, sh.stdout, "DLQ entry seq 1", "class SERVER")
	for _, id := range []string{"nohdr", "real"} {
		var les []ListedEntry
		lst := x.run(ctx, nil, "list", "--invocation", id, "--json").must(t, ExitOK, "list --invocation "+id)
		if err := json.Unmarshal([]byte(lst.stdout), &les); err != nil || len(les) != 1 || les[0].Entry.InvocationID != id {
			t.Fatalf("list --invocation %s: %v\n%s", id, err, lst.stdout)
		}
		var plan []PlannedJSON
		dry := x.run(ctx, nil, "replay", "--dry-run", "--json", "--invocation", id).must(t, ExitOK, "dry run --invocation "+id)
		if err := json.Unmarshal([]byte(dry.stdout), &plan); err != nil || len(plan) != 1 || plan[0].MsgID != ReplayMsgID(id, 1) {
			t.Fatalf("replay --dry-run --invocation %s: %v\n%s", id, err, dry.stdout)
		}
	}
	var plan []PlannedJSON
	dry := x.run(ctx, nil, "replay", "--dry-run", "--json", "--invocation", "other").must(t, ExitOK, "dry run --invocation other")
	if err := json.Unmarshal([]byte(dry.stdout), &plan); err != nil || len(plan) != 0 {
		t.Fatalf("replay --invocation other selects another invocation's entry: %v\n%s", err, dry.stdout)
	}
	for _, c := range []struct {
		cmd, id string
		want    int
	}{{"park", "nohdr", 1}, {"purge", "nohdr", 1}, {"park", "other", 0}, {"purge", "other", 0}} {
		var plan []PlannedJSON
		dry := x.run(ctx, nil, c.cmd, "--dry-run", "--json", "--invocation", c.id).must(t, ExitOK, c.cmd+" --dry-run --invocation "+c.id)
		if err := json.Unmarshal([]byte(dry.stdout), &plan); err != nil || len(plan) != c.want {
			t.Fatalf("%s --dry-run --invocation %s: %v, want %d entries\n%s", c.cmd, c.id, err, c.want, dry.stdout)
		}
	}
	x.run(ctx, nil, "show", "other").must(t, ExitError, "show of an invocation no entry is of")
}
