package client

import "github.com/agentfleet/agentfleet/pkg/envelope"

// Defaults of Config (the same as internal/streams').
const (
	DefaultRequestsStream = "AGENT_REQUESTS"
	DefaultResultsStream  = "AGENT_RESULTS"
)

// Config names the streams and subject prefixes a Client uses. Zero fields
// take the defaults.
type Config struct {
	// RequestsStream is the stream requests must land in (default
	// AGENT_REQUESTS); a publish that lands elsewhere fails.
	RequestsStream string
	// ResultsStream holds the results (default AGENT_RESULTS).
	ResultsStream string
	// RequestPrefix is the request subject prefix (default agent.requests).
	RequestPrefix string
	// ResultPrefix is the result subject prefix (default agent.results).
	ResultPrefix string
	// MaxRequestSize is the largest encoded request Submit sends (default
	// envelope.DefaultMaxSize, what the worker accepts).
	MaxRequestSize int
}

// WithDefaults returns c with empty fields set to the defaults.
func (c Config) WithDefaults() Config {
	if c.RequestsStream == "" {
		c.RequestsStream = DefaultRequestsStream
	}
	if c.ResultsStream == "" {
		c.ResultsStream = DefaultResultsStream
	}
	if c.RequestPrefix == "" {
		c.RequestPrefix = envelope.DefaultRequestPrefix
	}
	if c.ResultPrefix == "" {
		c.ResultPrefix = envelope.DefaultResultPrefix
	}
	if c.MaxRequestSize <= 0 {
		c.MaxRequestSize = envelope.DefaultMaxSize
	}
	return c
}
