// Package tool defines what the agent loop can call: the Tool interface, the
// per-call Context a tool reads from its context.Context, a helper that
// builds a Tool from a typed Go function, and the small, stable error maps
// (with a sanitiser) through which a tool tells the model about failures it
// can act on.
//
// The two currencies (from the ADK error-recovery seed): a failure the model
// can act on is returned as an error map and the invocation continues; a
// failure it cannot act on is returned as a Go error and, unless an
// on-tool-error callback turns it into a map, ends the invocation.
package tool
