// Package chaos is the fleet's chaos soak (make chaos): it proves, with
// real processes, that the workers lose no request and repeat no side
// effect while everything around them fails.
//
// A run starts its own nats-server (JetStream) and redis-server on free
// loopback ports, builds cmd/worker (and cmd/dlq-replayer) into a temporary
// directory and runs a fleet of worker processes with the SIMULATED model
// provider injecting transient faults and the demo orders service failing a
// share of tool calls. While invocations are submitted through pkg/client it
// SIGKILLs a worker every few seconds and starts it again, and restarts
// Redis and NATS once each (NATS on the same port and store directory, so
// the streams survive; Redis with an append-only file, so its state
// survives). When every request has a result, the workers are restarted
// without faults and the DLQ is replayed with `dlq-replayer replay`.
//
// The invariant checker then reads the last result of every invocation from
// AGENT_RESULTS, every entry of AGENT_DLQ, the invocation records and the
// demo:refunds list, and fails the run on any violation:
//   - lost = 0: every request had a result by the results deadline (60 %
//     of Config.Duration, before the fleet is restarted without faults)
//     and ended in exactly one of completed, dead-lettered or
//     failed-reported: a dead-lettered or failed result has its DLQ entry,
//     and a completed invocation has none left at the end (after a
//     replay none at all; without one none of a class never replayed
//     automatically);
//   - the last result is the invocation's own (its invocation_id is the
//     one looked up), the invocation record agrees with it, and no
//     completed result was followed by a different one, live or as the
//     last stored result;
//   - duplicated effects = 0: demo:refunds holds at most one record per
//     invocation of the run, on the order its request named;
//   - an invocation that did not complete ended with a failure class the
//     run's faults can produce (the simulated provider's transient classes
//     for the default spec; see faultEndings), not one the fleet made up;
//   - after the replay every invocation with a transient (auto-replayable)
//     DLQ entry completed.
//
// The harness clears the demo orders' refunded balances every few
// milliseconds, so no repeat is stopped by the amount check: what stands
// between a redelivery and a duplicate is the idempotency wrapper and, as
// the README asks of every effectful tool, the idempotency key passed
// downstream (the orders service books a key once). The second layer is
// needed, not a crutch: a worker killed after the booking and before the
// claim's completion leaves a claim that expires, and the next owner must
// ask again. The report counts the repeats that got past the wrapper and
// that the key stopped (support.RepeatsKey), so what each layer did is
// seen; a duplicate record is a violation whichever layer failed.
package chaos
