// Package dlq is the dead-letter side of the fleet (DESIGN.md): the entry
// format a worker writes to AGENT_DLQ on agent.dlq.<class>.<agent>, the
// Publisher that writes it exactly once per failure, awaiting the PubAck,
// and the Reader the
// dlq-replayer uses: List walks the stream by sequence without consuming
// anything (for list, stats and show), Fetch/Ack/Delete work the durable
// "dlq-replayer" consumer for replays.
//
// An entry's Nats-Msg-Id names what it records. The dead letter of a run
// of an invocation is dlq-<invocation_id>-<n>, n its replay count
// (MsgID, EntryMsgID): a worker that fails the same replay again after a
// crash writes nothing twice. An entry that records no failure generation
// of its invocation, the dead letter of a request message as it came (a
// BAD_INPUT refusal, a request the worker could not decode;
// Publisher.PublishAsReceived), and one whose invocation id was derived
// (DerivedInvocationID) are dlq-seq:<stream sequence>-<n> (SourceMsgID),
// named by the request's sequence in AGENT_REQUESTS: a redelivery of the
// message is still deduplicated, and a refusal never takes the id of the
// same invocation's real dead letter (a producer's resend that ran and
// failed), so one invocation may have both at the same n. Read the stored
// header (IsSourceMsgID) to tell them apart; EntryMsgID alone cannot.
//
// Entries are versioned JSON (field v). DecodeEntry is strict about what it
// needs (version, ids, class, times) and ignores unknown fields; a bad or
// truncated entry is a *DecodeError, which the Reader reports per entry so a
// listing never stops at one.
package dlq
