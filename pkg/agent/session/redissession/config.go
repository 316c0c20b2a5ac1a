package redissession

import (
	"errors"
	"fmt"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// DefaultPrefix is the key prefix when Config.Prefix is empty.
const DefaultPrefix = "agentfleet:"

// Config configures the Redis session backend. The zero value plus
// WithDefaults is a working configuration.
type Config struct {
	// Prefix starts every key (default DefaultPrefix). Several fleets or
	// environments can share a Redis by using different prefixes.
	Prefix string
	// SessionTTL, when positive, expires a session this long after its last
	// append (idle expiry). Zero keeps sessions until deleted.
	SessionTTL time.Duration
	// InvocationRetention is how long an invocation record is kept after its
	// last transition (default session.DefaultInvocationRetention).
	InvocationRetention time.Duration
}

// WithDefaults returns c with empty fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.InvocationRetention == 0 {
		c.InvocationRetention = session.DefaultInvocationRetention
	}
	return c
}

// Validate reports a configuration that cannot work. Call it on the result
// of WithDefaults.
func (c Config) Validate() error {
	var errs []error
	if c.Prefix == "" {
		errs = append(errs, errors.New("prefix is empty"))
	}
	if c.SessionTTL < 0 {
		errs = append(errs, fmt.Errorf("session TTL %v is negative", c.SessionTTL))
	}
	if c.SessionTTL > 0 && c.SessionTTL < time.Millisecond {
		errs = append(errs, fmt.Errorf("session TTL %v is below Redis's 1ms resolution", c.SessionTTL))
	}
	if c.InvocationRetention < time.Millisecond {
		errs = append(errs, fmt.Errorf("invocation retention %v is below 1ms", c.InvocationRetention))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("redissession: config: %w", err)
	}
	return nil
}
