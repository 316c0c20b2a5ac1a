package dlq

import (
	"strconv"

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
