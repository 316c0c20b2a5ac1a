// Package natssession stores sessions, session locks and invocation status
// records in NATS JetStream key-value buckets (github.com/nats-io/nats.go/
// jetstream). It works with NATS server 2.9, which has no per-key TTL, no
// ordered consumers and no batched direct gets, and uses only what 2.9 has:
// KV Get (a direct get of the subject's last message), Create (atomic
// create-if-absent), Update (compare-and-set on the key's revision), Delete
// with an expected revision, and bucket MaxAge.
//
// Buckets (names configurable; created or updated by the constructors, or
// only opened with Config.OpenExisting; the invocation bucket's MaxAge is
// never lowered):
//
//	agent_sessions       one entry per session: {state, events[]} as JSON
//	agent_session_locks  one entry per locked session: {owner, lease_ms}
//	agent_invocations    one entry per invocation: the record as JSON; MaxAge = retention
//
// Keys are the id segments base64url-encoded without padding and joined by
// '.', so any id (a ':' or '.' in it included) maps to a valid, distinct KV
// key. A key is part of a NATS subject, and a server closes the connection
// of a client that sends a protocol line past its max_control_line (4 KiB):
// so an encoded key may take at most MaxKeyLen (1,024) bytes, and every call
// given a longer one (ids of about 760 bytes together) fails with
// ErrKeyTooLong without sending anything. Ids within the request envelope's
// limits always fit.
//
// # Sessions: one entry per session, and its trade-off
//
// AppendEvent reads the session's entry, appends the event and merges the
// state delta, and writes it back with Update at the revision it read; on a
// revision conflict (a concurrent append) it reads again and retries, with
// jittered backoff. So appends are atomic with their state delta, totally
// ordered, and each writer's appends stay in its own order; Get is one
// direct get. The cost: every append rewrites the whole session (O(size) per
// append), and a session must fit in one message: the server's max_payload
// (1 MiB by default) or the bucket's MaxValueSize. An append past that fails
// with a *session.TooLargeError (errors.Is ErrSessionTooLarge, which is
// session.ErrSessionTooLarge) and stores nothing; every later append to
// that session fails the same way, so it is not retried as an outage (the
// worker dead-letters the invocation after its one run). Agent sessions are
// usually far smaller; for long-lived sessions with large tool results use
// the Redis backend. The alternative (a stream with a subject per session)
// appends in O(1), but on 2.9 reading a session back means one direct get
// per event (no ordered consumers, no batch get), and the state delta would
// no longer be atomic with the append.
//
// # Locks: lease times inside the value
//
// With no per-key TTL, a lock entry holds its owner and lease duration; it
// expires lease after the entry's server timestamp. Takeover and renewal are
// revision-checked Updates, so two contenders never both win. Expiry is
// judged by the caller's clock against the server's write time, so leases
// must be much longer than the clock skew between workers and the NATS
// server. The bucket's MaxAge (Config.LockMaxAge) only garbage-collects
// abandoned entries; a lease may not exceed it.
package natssession
