package replayer

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// Regression (found in review, nineteenth session): an entry this replayer
// cannot decode (the usual one: a newer worker's entry version during a
// rolling upgrade) still carries its invocation id in the
// Agent-Invocation-Id header the publisher sets, and the replayer uses it:
// `show <id>` finds the entry by it, `purge --invocation <id>` and `park
// --invocation <id>` select it, and the dry run's table prints it. But
// `list`, where on-call looks for the id to copy into those commands,
// printed "-" in the INVOCATION column, and `list --json` had no invocation
// id for it at all. Now list shows (and --json carries, as invocation_id)
// the header's invocation id for a bad entry, as the dry run does.
func TestListHidesTheInvocationIdOfABadEntry(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	const id = "inv-from-newer-worker"
	msg := &nats.Msg{Subject: x.sc.DLQSubject("SERVER", "support"), Header: nats.Header{},
		Data: []byte(`{"v":2,"invocation_id":"` + id + `","agent":"support","class":"SERVER"}`)}
	msg.Header.Set(dlq.HeaderClass, "SERVER")
	msg.Header.Set(dlq.HeaderAgent, "support")
	msg.Header.Set(dlq.HeaderInvocationID, id)
	msg.Header.Set(dlq.HeaderEntryVersion, "2")
	if _, err := x.js.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}

	// The commands that take the id find the entry by it.
	sh := x.run(ctx, nil, "show", id).must(t, ExitOK, "show")
	contains(t, sh.stdout, "BAD ENTRY")
	dry := x.run(ctx, nil, "purge", "--invocation", id, "--dry-run").must(t, ExitOK, "purge --dry-run")
	contains(t, dry.stdout, id, "would delete 1 entries")

	lst := x.run(ctx, nil, "list").must(t, ExitOK, "list")
	js := x.run(ctx, nil, "list", "--json").must(t, ExitOK, "list --json")
	var listed []map[string]any
	if err := json.Unmarshal([]byte(js.stdout), &listed); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(lst.stdout, id) || !strings.Contains(js.stdout, `"`+id+`"`) {
		t.Fatalf("show and purge --invocation take %q, but list does not show it for the bad entry:\n%s\nlist --json:\n%s", id, lst.stdout, js.stdout)
	}
	if len(listed) != 1 || listed[0]["invocation_id"] != id {
		t.Fatalf("list --json: want invocation_id %q on the bad entry, got %v", id, listed)
	}
	shj := x.run(ctx, nil, "show", id, "--json").must(t, ExitOK, "show --json")
	var shown Shown
	if err := json.Unmarshal([]byte(shj.stdout), &shown); err != nil {
		t.Fatal(err)
	}
	if len(shown.Entries) != 1 || shown.Entries[0].InvocationID != id {
		t.Fatalf("show --json: want the bad entry with invocation_id %q, got %+v", id, shown.Entries)
	}
}
