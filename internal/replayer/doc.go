// Package replayer is the logic of cmd/dlq-replayer, the on-call tool that
// drains the dead-letter stream safely: it shows what failed and why, and
// brings the work back without repeating a side effect and without knocking
// a recovering provider over again. cmd/dlq-replayer only wires signals,
// standard streams and the exit code to Run.
//
// Usage:
//
//	dlq-replayer <command> [flags]
//
//	stats                 counts by class × agent, oldest and newest age, replayable or not, parked count
//	list                  the entries (a table, or --json)
//	show <invocation_id>  the entry, the session's events of the invocation, the tool effects already done
//	replay                republish entries to the workers (--dry-run, --canary N, --wait, --max, --rate, --concurrency)
//	park                  move entries aside to the parked stream (never replayed automatically)
//	purge                 delete entries (asks for confirmation or --yes; --parked: of the parked stream)
//	drain                 long-running: replay the auto-replayable classes at a rate once their model's cooldown closed
//
// Common flags: --config, --nats-url (default nats://127.0.0.1:4222, env
// AGENTFLEET_NATS_URL), --redis-url (env AGENTFLEET_REDIS_URL; empty: NATS
// KV stores), --json. Filters: --class, --agent, --since, --until (RFC 3339
// or a duration ago such as 2h), --invocation.
//
// Replay semantics. A replay republishes the entry's original request to
// agent.requests.<agent> with the same invocation id and the headers
// Agent-Resume: true, Agent-Replay-Count: n (the entry's replay count + 1),
// Agent-First-Failed-At and Nats-Msg-Id: replay:<invocation_id>:<n> (a
// ':' no invocation id has, so no producer's request shares it). The DLQ
// entry is deleted only after the PubAck, so a replayer that dies
// between the two leaves the entry in place; the next run publishes the same
// message id again and the server drops it as a duplicate (within the
// requests' duplicate window; after it the worker's invocation record
// recognises the replay count). Two replayers running at once coordinate the
// same way: the second publish of replay:<id>:<n> comes back as a duplicate
// and is counted as "already replayed", never as a second replay. Handled
// entries leave the DLQ in batches where the plan holds every entry of
// their subject (one filtered purge below a sequence instead of one delete
// each; see remover) on NATS 2.9.18 and later, otherwise one by one (an
// older server's filtered purge moved other replayers' consumers past
// entries they then never saw: dlq.Reader.BatchDeletes); an interrupted run may leave
// up to a batch of replayed entries behind, which the next run counts as
// already replayed, or, once their invocation completed, as "already
// completed" (not replayed again: the worker would ack it without a result,
// and a canary must be made of replays that run). Entries are
// selected by walking the stream in stream order (a short-lived ephemeral
// consumer for replays, dlq.Reader.List for list, stats and show), not by the
// durable "dlq-replayer" consumer, so that filters, --dry-run and the real
// run select exactly the same entries and a filtered replay never has to
// hand other entries back; the durable consumer is kept ensured for other
// tools. A run only takes entries stored before it started: an entry that
// fails again during the run (replay count n+1) waits for the next run.
//
// Safety rules (exit code 2): classes the taxonomy marks not auto-replayable
// (BAD_INPUT, CALL_BUDGET, UNKNOWN, AUTH, NOT_FOUND, BAD_REQUEST) are
// refused unless named with --class and --force; more than
// replay.confirm_above entries need a confirmation on a terminal or --yes;
// --canary N halts when any of the first N replays fails again; a run halts
// by itself when replay.halt_ratio of the results that came back are
// dead_lettered or failed (after replay.halt_min_results results). A replay
// pauses while the fleet-wide cooldown of the entry's model is open. An
// entry already replayed replay.max_replays times is parked, not replayed.
//
// Stores check: show, replay (its dry run too) and drain read the fleet's
// stores (sessions, invocation records, tool effects, cooldowns). At start
// they compare the stores they are configured with (NATS KV, or Redis: db,
// redis.prefix and the id the stores keep at <prefix>stores:id, read and
// never set) with the ones the fleet's workers record in the worker
// consumer, and refuse others (ErrOtherStores, exit 3), naming both: on
// another prefix show would report no tool effect done. A worker consumer
// that records none (an earlier version) or is missing cannot be checked:
// a warning on stderr, and the command runs. A check that cannot be decided
// (ErrStoresNotChecked: Redis does not answer, the worker consumer or the
// stores id cannot be read, as with a NATS permission error or a JetStream
// timeout) is a warning ("stores not checked: …") for show and replay
// --dry-run, which change nothing, and they go on (during a Redis outage
// the dry run prints its plan, and show the DLQ and parked entries, saying
// that it did not look up the record, session events and tool effects);
// replay and drain refuse to start without it
// (exit 1, as when they cannot reach their stores). drain checks again
// before each pass: a pass that finds other stores replays nothing, logs
// it and counts agentfleet_dlq_replayer_halts_total{rule="stores"}
// (RuleStores), and the drain keeps running, replaying again once the
// fleet's workers record its stores; a pass that cannot decide replays
// nothing and is logged as a failed pass.
//
// "Replayable" in stats, list and show is what a replay or drain handles by
// itself (replays, or parks once replayed too often), by the dry run's rule:
// an entry of an auto-replayable class first failed before the idempotency
// records' retention needs a person, as drain's entries gauge counts it.
// Of a parked entry, which nothing replays by itself, it says whether
// replay --parked would take it (show labels it "parked: bring it back
// with replay --parked").
//
// Exit codes (the Exit constants): 0 done, 1 error, 2 halted or refused by a
// safety rule, 3 usage or configuration (bad flags or arguments, an unknown
// --class, a bad configuration file, stores that are not the fleet's), 130
// interrupted. A --class the taxonomy does not know is unknown unless it is
// well-formed ([A-Z][A-Z0-9_]*) and the DLQ or the parked stream holds
// entries of it (a newer worker's class).
package replayer
