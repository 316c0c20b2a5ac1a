package dlq

import "github.com/agentfleet/agentfleet/pkg/envelope"

// Defaults of Config, the same as internal/streams'.
const (
	DefaultStream   = "AGENT_DLQ"
	DefaultPrefix   = envelope.DefaultDLQPrefix
	DefaultConsumer = "dlq-replayer"
)

// Config names the dead-letter stream, its subject prefix and the durable
// consumer of the replayer. Zero fields take the defaults.
type Config struct {
	// Stream is the DLQ stream (default AGENT_DLQ).
	Stream string
	// Prefix is the subject prefix (default agent.dlq): entries go to
	// <Prefix>.<class>.<agent>.
	Prefix string
	// Consumer is the replayer's durable pull consumer (default
	// dlq-replayer).
	Consumer string
}

// WithDefaults returns c with empty fields set to the defaults.
func (c Config) WithDefaults() Config {
	if c.Stream == "" {
		c.Stream = DefaultStream
	}
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.Consumer == "" {
		c.Consumer = DefaultConsumer
	}
	return c
}
