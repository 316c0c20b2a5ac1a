package replayer

import (
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/dlq"
	"github.com/agentfleet/agentfleet/pkg/envelope"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// ReplayMsgID is the Nats-Msg-Id of the n-th replay of an invocation:
// replay:<invocation_id>:<n>. A second publish of it within the requests'
// duplicate window is dropped by the server. A producer's request carries
// its invocation id as its Nats-Msg-Id in the same stream, and invocation
// ids cannot contain ':' ([A-Za-z0-9_-]), so no request of a producer can
// take a replay's id (the earlier replay-<id>-<n> could: a request with the
// id replay-x-1 made x's replay a "duplicate", and its DLQ entry was
// deleted without a replay).
func ReplayMsgID(invocationID string, n int) string {
	return "replay:" + invocationID + ":" + strconv.Itoa(n)
}

// EntryReplayMsgID is the Nats-Msg-Id of e's next replay:
// ReplayMsgID(e's invocation id, its replay count + 1), or, for an entry
// whose invocation id was derived from its request's stream sequence
// (dlq.IsDerived), replay:seq:<sequence>:<n>. A producer may name an
// invocation seq-5 as well; with ReplayMsgID alone a forced replay of the
// undecodable request at sequence 5 and a replay of that invocation shared
// an id, and the second was dropped as a duplicate and its entry deleted
// unreplayed (found in review, sixteenth session). dlq.EntryMsgID keeps
// the two apart the same way.
//
// An entry published as received (a BAD_INPUT refusal) is named by its
// request's sequence too, which the entry alone does not show: the
// replayer names a stored entry's replay with ItemReplayMsgID.
func EntryReplayMsgID(e *dlq.Entry) string {
	if dlq.IsDerived(e) {
		return seqReplayMsgID(e)
	}
	return ReplayMsgID(e.InvocationID, e.ReplayCount+1)
}

// ItemReplayMsgID is the Nats-Msg-Id of the next replay of the decoded
// entry it, as stored in the DLQ or the parked stream:
// replay:seq:<source sequence>:<n> when its stored message id names it by
// its request's stream sequence (dlq.IsSourceMsgID: an entry published as
// received, such as a BAD_INPUT refusal, or its parked copy
// parked-seq:...), else EntryReplayMsgID. An invocation may have a refusal
// and a real dead letter at the same replay count; with
// EntryReplayMsgID alone their replays shared replay:<id>:<n>, and after a
// forced replay of the refusal the real entry's replay was dropped as a
// duplicate and its entry deleted as "already replayed" (found in review,
// twenty-third session). A BAD_INPUT entry is named so whatever its
// stored id: a worker older than that session stored its refusals as
// dlq-<id>-<n>, the id a newer worker gives the invocation's real dead
// letter (found in review of this session's fix).
func ItemReplayMsgID(it *dlq.Item) string {
	e := it.Entry
	if e.SourceSeq != 0 && (dlq.IsSourceMsgID(storedDLQMsgID(it)) || e.Class == string(taxonomy.BadInput)) {
		return seqReplayMsgID(e)
	}
	return EntryReplayMsgID(e)
}

// seqReplayMsgID is replay:seq:<e's source sequence>:<e's replay count + 1>.
func seqReplayMsgID(e *dlq.Entry) string {
	return "replay:seq:" + strconv.FormatUint(e.SourceSeq, 10) + ":" + strconv.Itoa(e.ReplayCount+1)
}

// storedDLQMsgID is the DLQ message id of the stored entry it: its
// Nats-Msg-Id, with a parked copy's "parked" turned back into "dlq" (Park
// names the copy after the DLQ id, see itemParkedMsgID); "" without one.
func storedDLQMsgID(it *dlq.Item) string {
	id := it.Header.Get(dlq.HeaderMsgID)
	if rest, ok := strings.CutPrefix(id, "parked-"); ok {
		return "dlq-" + rest
	}
	return id
}

// ReplayItemMsg is ReplayMsg for the decoded entry it as stored: its
// Nats-Msg-Id is ItemReplayMsgID's.
func ReplayItemMsg(sc streams.Config, it *dlq.Item) *nats.Msg {
	msg := ReplayMsg(sc, it.Entry)
	msg.Header.Set(envelope.HeaderMsgID, ItemReplayMsgID(it))
	return msg
}

// ReplayMsg returns the request message that replays e: its original
// request on <request prefix>.<agent> with Agent-Resume: true,
// Agent-Replay-Count: e.ReplayCount+1, Agent-First-Failed-At and the
// Nats-Msg-Id EntryReplayMsgID; a CALL_BUDGET entry also gets
// Agent-Fresh-Budget: true.
func ReplayMsg(sc streams.Config, e *dlq.Entry) *nats.Msg {
	n := e.ReplayCount + 1
	msg := &nats.Msg{Subject: sc.RequestSubject(e.Agent), Data: e.OriginalRequest(), Header: nats.Header{}}
	msg.Header.Set(envelope.HeaderMsgID, EntryReplayMsgID(e))
	msg.Header.Set(envelope.HeaderResume, "true")
	msg.Header.Set(envelope.HeaderReplayCount, strconv.Itoa(n))
	msg.Header.Set(worker.HeaderFirstFailedAt, e.FirstFailedAt.UTC().Format(time.RFC3339Nano))
	if e.Class == string(taxonomy.CallBudget) {
		// Replayed only with --force, after a person fixed the loop: the
		// budget the earlier runs used up must not end it again at once.
		msg.Header.Set(envelope.HeaderFreshBudget, "true")
	}
	return msg
}
