// Package envelope defines the JSON messages exchanged over JetStream (see
// DESIGN.md): the request a producer publishes to agent.requests.<agent>, the
// result a worker publishes to agent.results.<invocation_id>, their header
// names, and strict decoders for outside input (schema version, required
// fields, subject-safe ids, size limit). Unknown fields are ignored so that
// producers can be upgraded before workers.
package envelope
