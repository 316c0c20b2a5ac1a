// Package session holds a conversation's durable record: the Event type the
// agent loop appends as things happen, the Service interface that stores
// events and state, and an in-memory Service. Durable backends (Redis, NATS
// KV) live in sub-packages and all pass the conformance suite in
// sessiontest.
package session
