package client

import (
	"fmt"
	"strings"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

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
	// envelope.DefaultMaxSize, what the worker accepts by default). Send
	// also refuses a request larger than the worker takes on the server
	// it is connected to (dlq.MaxWholeRequest of its max_payload, its
	// max_payload less 9 KiB: less than the default on a server whose
	// max_payload is under 1 MiB less 7 KiB).
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

// Validate checks a configuration with its defaults applied (New applies
// them and validates): stream names that can be an API subject token, and
// subject prefixes without wildcards or empty tokens that do not overlap
// (a result prefix under the request prefix would make every result a
// request). The error matches ErrInvalidConfig.
func (c Config) Validate() error {
	for _, n := range []struct{ field, v string }{
		{"RequestsStream", c.RequestsStream}, {"ResultsStream", c.ResultsStream},
	} {
		if err := envelope.ValidateStreamName(n.v); err != nil {
			return configError(n.field, err.Error())
		}
	}
	if c.RequestsStream == c.ResultsStream {
		return configError("ResultsStream", "the same stream as RequestsStream")
	}
	for _, p := range []struct{ field, v string }{
		{"RequestPrefix", c.RequestPrefix}, {"ResultPrefix", c.ResultPrefix},
	} {
		if err := envelope.ValidateSubjectPrefix(p.v); err != nil {
			return configError(p.field, err.Error())
		}
	}
	a, b := c.RequestPrefix, c.ResultPrefix
	if a == b || strings.HasPrefix(a, b+".") || strings.HasPrefix(b, a+".") {
		return configError("ResultPrefix", fmt.Sprintf("%q overlaps RequestPrefix %q", b, a))
	}
	return nil
}

func configError(field, reason string) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalidConfig, field, reason)
}
