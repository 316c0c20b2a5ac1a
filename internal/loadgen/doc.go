// Package loadgen is the fleet's load benchmark (cmd/loadgen, make bench).
//
// It drives the worker fleet end to end with the support workload (three
// model calls, get_order, the idempotent refund_order, a final answer) on the
// SIMULATED model provider (pkg/providers/sim), against real NATS + Redis or
// an embedded NATS server with NATS KV stores, and measures in the same run,
// on the same servers, two baselines:
//
//   - bare: JetStream publish, consume and ack of the same requests, nothing
//     else;
//   - minimal: a hand-written consumer that performs only the necessary I/O
//     of one invocation with no framework: its 6 session events in 3
//     appends (one RPUSH per model response, with the events before it, as
//     the fleet stores them; one put each on NATS KV), the tool reads and
//     effect, one idempotency claim (SET NX) and one completion (SET), the
//     result publish and the ack.
//
// Figures are only meaningful as ratios against the baselines of the same
// run: the machine is shared. A second mode (Config.Inflight > 0) runs one
// worker with that many invocations in flight against the Little's-law
// bound inflight / (3 × model latency).
//
// Every run uses stream names, subject prefixes and Redis key prefixes of
// its own and deletes them at the end. No timing is asserted in tests.
package loadgen
