// Package client is the producer side of the fleet: it submits request
// envelopes to agent.requests.<agent> (the invocation id doubles as
// Nats-Msg-Id, so a resubmission within the duplicate window is dropped by
// the server) and awaits results on agent.results.<invocation_id>.
//
// Awaiting works before and after completion: Await first subscribes to the
// result subject with a plain core-NATS subscription, then reads the last
// stored message of that subject from AGENT_RESULTS, and only then waits on
// the subscription, so a result published at any moment is seen. This needs
// nothing newer than NATS server 2.9 (no ordered consumers).
package client
