// Package dlq is the dead-letter side of the fleet (DESIGN.md): the entry
// format a worker writes to AGENT_DLQ on agent.dlq.<class>.<agent>, the
// Publisher that writes it exactly once per failure (Nats-Msg-Id
// dlq-<invocation_id>-<n>, awaiting the PubAck), and the Reader the
// dlq-replayer uses: List walks the stream by sequence without consuming
// anything (for list, stats and show), Fetch/Ack/Delete work the durable
// "dlq-replayer" consumer for replays.
//
// Entries are versioned JSON (field v). DecodeEntry is strict about what it
// needs (version, ids, class, times) and ignores unknown fields; a bad or
// truncated entry is a *DecodeError, which the Reader reports per entry so a
// listing never stops at one.
package dlq
