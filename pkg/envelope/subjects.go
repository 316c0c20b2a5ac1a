package envelope

// Subject helpers for the default subject layout (DESIGN.md). The prefixes
// are configurable in the stream configuration; these use the defaults.
const (
	DefaultRequestPrefix = "agent.requests"
	DefaultResultPrefix  = "agent.results"
	DefaultDLQPrefix     = "agent.dlq"
)

// RequestSubject returns "<prefix>.<agent>".
func RequestSubject(prefix, agent string) string { return prefix + "." + agent }

// ResultSubject returns "<prefix>.<invocation_id>".
func ResultSubject(prefix, invocationID string) string { return prefix + "." + invocationID }

// DLQSubject returns "<prefix>.<class>.<agent>".
func DLQSubject(prefix, class, agent string) string { return prefix + "." + class + "." + agent }
