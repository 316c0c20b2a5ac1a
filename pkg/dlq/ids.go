package dlq

import (
	"strconv"
	"strings"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// UnknownAgent is the agent token of an entry whose request named no valid
// agent (an undecodable request).
const UnknownAgent = "unknown"

// derivedPrefix starts every derived invocation id.
const derivedPrefix = "seq-"

// MsgID returns the Nats-Msg-Id of the n-th failure of an invocation:
// dlq-<invocationID>-<n>. The Publisher uses the entry's ReplayCount as n: a
// worker that crashes between the DLQ publish and the ack fails the same
// replay again and its second entry is dropped as a duplicate, while a
// failure after a replay (ReplayCount+1) is a new entry.
func MsgID(invocationID string, n int) string {
	return "dlq-" + invocationID + "-" + strconv.Itoa(n)
}

// EntryMsgID returns the Nats-Msg-Id Publisher.Publish gives e: MsgID(e's
// invocation id, e's replay count), or, for an entry whose invocation id was
// derived from its request's stream sequence (IsDerived),
// dlq-seq:<sequence>-<n>. A producer may name an invocation seq-5 as well,
// and ':' is in no invocation id, so the dead letter of the undecodable
// request at sequence 5 and that invocation's never share a message id
// (with MsgID alone they did, and the second was dropped as a duplicate).
//
// Publisher.PublishAsReceived gives every entry SourceMsgID instead, so
// EntryMsgID is not the stored id of such an entry: a reader that needs it
// reads the stored message's own Nats-Msg-Id (HeaderMsgID, see
// IsSourceMsgID).
func EntryMsgID(e *Entry) string {
	if IsDerived(e) {
		return SourceMsgID(e.SourceSeq, e.ReplayCount)
	}
	return MsgID(e.InvocationID, e.ReplayCount)
}

// SourceMsgID returns dlq-seq:<sourceSeq>-<n>, the Nats-Msg-Id of the dead
// letter of the request message stored at sourceSeq in AGENT_REQUESTS, as
// it came, at replay n: of an entry that records no failure generation of
// its invocation (Publisher.PublishAsReceived). A redelivery of the same
// message has the same sequence, so a re-publish after a crash is still
// dropped as a duplicate; and no invocation's MsgID takes it (':' is in no
// invocation id), so it never swallows the dead letter of a real run of the
// same invocation id, nor is swallowed by it.
func SourceMsgID(sourceSeq uint64, n int) string {
	return sourceMsgIDPrefix + strconv.FormatUint(sourceSeq, 10) + "-" + strconv.Itoa(n)
}

// sourceMsgIDPrefix starts every SourceMsgID.
const sourceMsgIDPrefix = "dlq-seq:"

// IsSourceMsgID reports whether id, a stored entry's Nats-Msg-Id
// (HeaderMsgID), is a SourceMsgID: the entry is named by its request's
// stream sequence (it was published as received, or its invocation id was
// derived), not by its invocation's failure generation. Anything that
// names such an entry's work after it (a replay, a parked copy) must do so
// by the sequence too: an invocation may have both a refusal and a real
// dead letter at the same replay count.
func IsSourceMsgID(id string) bool { return strings.HasPrefix(id, sourceMsgIDPrefix) }

// IsDerived reports whether e's invocation id is the one
// DerivedInvocationID gives its request's stream sequence. An invocation a
// producer named seq-<n> whose request was stored at sequence n counts too:
// the sequence is still one request's.
func IsDerived(e *Entry) bool {
	return e.SourceSeq != 0 && e.InvocationID == DerivedInvocationID(e.SourceSeq)
}

// DerivedInvocationID returns the invocation id given to a request that has
// no valid one (BAD_INPUT): "seq-<n>" with n the request's stream sequence
// in AGENT_REQUESTS. Stream sequences are never reused within a stream, and
// a redelivery of the same message has the same sequence, so the DLQ
// de-duplication still holds.
func DerivedInvocationID(streamSeq uint64) string {
	return derivedPrefix + strconv.FormatUint(streamSeq, 10)
}

// AgentToken returns agent when it is a valid agent name (a subject token),
// else UnknownAgent.
func AgentToken(agent string) string {
	if envelope.ValidID(agent) {
		return agent
	}
	return UnknownAgent
}
