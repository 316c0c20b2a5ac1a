package replayer

import (
	"testing"

	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// The requests stream de-duplicates on one Nats-Msg-Id namespace: a
// producer's request carries its invocation id, a replay its ReplayMsgID.
// No invocation id a producer may choose ([A-Za-z0-9_-]{1,128}) may take a
// replay's id: with the earlier form replay-<invocation_id>-<n>, a request
// whose id read "replay-victim-0-1" made the replay of victim-0 come back
// "duplicate", and the replayer counted it as already replayed and deleted
// the DLQ entry, though victim-0 was never republished.
func TestNoInvocationIDTakesAReplaysMsgID(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	ids := x.seed("victim", 1, "SERVER", 0)
	// Another invocation, submitted by a producer with an id of its own
	// choosing (producer send --invocation), within the duplicate window:
	// the replay id's earlier form.
	other := "replay-" + ids[0] + "-1"
	x.submit(request(other, "A-2001"))
	out := x.run(ctx, nil, "replay", "--yes").must(t, ExitOK, "replay")
	published := x.requestMsgIDs()
	if published[ReplayMsgID(ids[0], 1)] != 1 || published[other] != 1 || len(published) != 2 {
		t.Fatalf("requests stored: %v; want the producer's %s and the replay of %s\nsummary:\n%s\nstderr:\n%s",
			published, other, ids[0], out.stdout, out.stderr)
	}
	if left := x.dlqIDs(); len(left) != 0 {
		t.Fatalf("left in the DLQ: %v", left)
	}
}

// The parked copies' message ids of three entries that an earlier form
// could confuse are distinct: an invocation named "seq" at replay 5, the
// entry of the undecodable request at AGENT_REQUESTS sequence 5 (derived
// id seq-5), and an undecodable DLQ entry at DLQ sequence 5 (the earlier
// parked-seq-<n> was the first one's id).
func TestParkedMsgIDsAreDistinct(t *testing.T) {
	ids := map[string]string{
		"invocation seq, replay 5":                    ParkedMsgID(&dlq.Entry{InvocationID: "seq", ReplayCount: 5}),
		"derived seq-5":                               ParkedMsgID(&dlq.Entry{InvocationID: dlq.DerivedInvocationID(5), SourceSeq: 5}),
		"invocation seq-5, replay 0, from sequence 9": ParkedMsgID(&dlq.Entry{InvocationID: "seq-5", SourceSeq: 9}),
		"undecodable DLQ entry 5":                     parkedRawMsgID(5),
	}
	seen := map[string]string{}
	for what, id := range ids {
		if other, dup := seen[id]; dup {
			t.Fatalf("%s and %s share the parked message id %s", what, other, id)
		}
		seen[id] = what
	}
}
