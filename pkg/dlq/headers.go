package dlq

import "github.com/agentfleet/agentfleet/pkg/envelope"

// Headers set on every DLQ entry, so the replayer can filter and route
// without decoding the body.
const (
	// HeaderMsgID is JetStream's de-duplication header:
	// dlq-<invocation_id>-<n> (see MsgID), or dlq-seq:<sequence>-<n> for
	// an entry published as received (see SourceMsgID).
	HeaderMsgID = envelope.HeaderMsgID
	// HeaderClass is the failure class (also the subject's class token).
	HeaderClass = "Agent-Error-Class"
	// HeaderAgent is the agent token of the subject ("unknown" when the
	// request named no valid agent).
	HeaderAgent = "Agent-Name"
	// HeaderInvocationID is the entry's invocation id.
	HeaderInvocationID = "Agent-Invocation-Id"
	// HeaderReplayCount is the entry's replay count, as on replayed
	// requests.
	HeaderReplayCount = envelope.HeaderReplayCount
	// HeaderEntryVersion is the entry's schema version.
	HeaderEntryVersion = "Agent-DLQ-Version"
)
