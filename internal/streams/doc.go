// Package streams declares the fleet's JetStream topology (DESIGN.md): the
// streams AGENT_REQUESTS (work queue), AGENT_RESULTS (one result per
// invocation, 24h) and AGENT_DLQ (14 days), and the durable pull consumers
// "workers" and "dlq-replayer". Ensure creates or updates all of them
// idempotently and uses only features that NATS server 2.9 has: one filter
// subject per consumer, no per-message TTL, no ordered consumers.
package streams
