// Package producercli is the logic of cmd/producer: the send, await and
// batch commands on top of pkg/client. cmd/producer only wires signals,
// standard streams and the exit code to Run.
//
// Usage:
//
//	producer [--nats-url URL] [--timeout D] send --agent A --user U --session S [--invocation ID] [--metadata k=v]... [--wait] [--json] TEXT...
//	producer [--nats-url URL] [--timeout D] await [--json] INVOCATION_ID
//	producer [--nats-url URL] [--timeout D] batch --file requests.jsonl [--rate N] [--concurrency N]
//
// Flags may also follow the command and its arguments. --nats-url defaults
// to $AGENTFLEET_NATS_URL, else nats://127.0.0.1:4222. --timeout is how long
// to wait for a result (per invocation in a batch; default 2m). The streams
// must exist (the fleet creates them; see internal/streams). The producer
// uses the default streams and subject prefixes, or the fleet's as the
// worker's variables AGENTFLEET_STREAMS_REQUESTS, _RESULTS, _REQUEST_PREFIX
// and _RESULT_PREFIX set them (a value the worker would refuse is exit 2;
// these four are checked among themselves only, the DLQ's being the
// worker's concern).
// A --metadata key may be given once; --rate must be finite.
//
// A batch line whose publish falls inside a NATS outage (no PubAck, no
// JetStream responders yet, the connection reconnecting) is sent again
// with jittered backoff, at the batch's --rate, for at most its --timeout;
// the requests stream's duplicate window makes that safe. It is not sent
// again when the server says the request cannot be stored (no stream
// stores its subject, the connection may not publish to it) or refuses it
// (client.RefusedError): those fail the line at once.
//
// A batch's lines of one session (agent, user and session) run one at a
// time, in file order. A line that ends without a result (a timeout, an
// error, canceled, or invalid once sent) holds the session's later lines:
// they are reported "held" and not sent, and a rerun of the file sends
// them in order (lines that completed are looked up and skipped). So does
// an invalid line whose JSON names its agent, user and session (too
// large, longer than a line may be, not valid UTF-8 outside the names,
// failing validation, reusing another line's id for another request):
// the rerun sends them after the fixed line.
//
// Exit codes (see the Exit constants): 0 success (every result completed),
// 1 an error (NATS unreachable, a file unreadable, a publish failed, a
// result look-up the connection's permissions refuse; for await and send
// --wait also a wait during which JetStream answered no look-up), 2 usage,
// 3 timed out waiting for a result, 4 a result that is not completed
// (failed or dead-lettered; in a batch also invalid lines, timeouts and
// lines held because an earlier line of their session has no result),
// 130 interrupted.
package producercli
