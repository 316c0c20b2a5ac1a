package streams

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// ErrInvalidConfig is matched (errors.Is) by every *ConfigError.
var ErrInvalidConfig = errors.New("streams: invalid config")

// ConfigError reports one invalid Config field.
type ConfigError struct {
	// Field is the Config field's name.
	Field string
	// Reason says what is wrong with it.
	Reason string
}

// Error implements error.
func (e *ConfigError) Error() string {
	return fmt.Sprintf("streams: invalid config: %s: %s", e.Field, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidConfig) true.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// ResultsAgeSlack is how much longer than the requests' duplicate window
// (RequestDuplicates) Validate requires the results' max age
// (ResultsMaxAge) to be. A result is stored after its request, so with a
// max age at least the window it outlives the request's id in the window,
// and a resubmission either finds it stored or is a new request (which
// the worker answers from the invocation's record). The slack covers the
// server keeping an id past its window (its purge timer runs late under
// load).
const ResultsAgeSlack = time.Minute

// Validate checks a configuration (call WithDefaults first: zero fields are
// invalid). It returns the first problem as a *ConfigError.
func (c Config) Validate() error {
	for _, n := range []struct{ field, v string }{
		{"RequestsStream", c.RequestsStream}, {"ResultsStream", c.ResultsStream},
		{"DLQStream", c.DLQStream}, {"WorkerConsumer", c.WorkerConsumer},
		{"ReplayerConsumer", c.ReplayerConsumer},
	} {
		if err := envelope.ValidateStreamName(n.v); err != nil {
			return &ConfigError{Field: n.field, Reason: err.Error()}
		}
	}
	if c.RequestsStream == c.ResultsStream || c.RequestsStream == c.DLQStream || c.ResultsStream == c.DLQStream {
		return &ConfigError{Field: "RequestsStream", Reason: "the three stream names must differ"}
	}
	prefixes := []struct{ field, v string }{
		{"RequestPrefix", c.RequestPrefix}, {"ResultPrefix", c.ResultPrefix}, {"DLQPrefix", c.DLQPrefix},
	}
	for _, p := range prefixes {
		if err := envelope.ValidateSubjectPrefix(p.v); err != nil {
			return &ConfigError{Field: p.field, Reason: err.Error()}
		}
	}
	for i, a := range prefixes {
		for j, b := range prefixes {
			if i != j && (a.v == b.v || strings.HasPrefix(b.v, a.v+".")) {
				return &ConfigError{Field: b.field, Reason: fmt.Sprintf("%q overlaps %s %q", b.v, a.field, a.v)}
			}
		}
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{
		{"RequestDuplicates", c.RequestDuplicates}, {"ResultsMaxAge", c.ResultsMaxAge},
		{"DLQMaxAge", c.DLQMaxAge}, {"DLQDuplicates", c.DLQDuplicates},
		{"WorkerAckWait", c.WorkerAckWait}, {"ReplayerAckWait", c.ReplayerAckWait},
	} {
		if d.v <= 0 {
			return &ConfigError{Field: d.field, Reason: "must be positive"}
		}
	}
	if c.ResultsMaxAge < c.RequestDuplicates+ResultsAgeSlack {
		// Found in review, twenty-fourth session: a batch rerun of a
		// completed line waited out its timeout on every rerun.
		return &ConfigError{Field: "ResultsMaxAge", Reason: fmt.Sprintf(
			"%v is shorter than RequestDuplicates (%v) + %v: a result would age out while its request's id is "+
				"still in the duplicate window, and a resubmission then (a batch rerun) would be dropped unanswered "+
				"(the worker's streams.results_max_age and streams.duplicate_window)",
			c.ResultsMaxAge, c.RequestDuplicates, ResultsAgeSlack)}
	}
	if c.DLQDuplicates > c.DLQMaxAge {
		return &ConfigError{Field: "DLQDuplicates", Reason: "longer than DLQMaxAge"}
	}
	if c.DLQDuplicates <= c.WorkerAckWait {
		return &ConfigError{Field: "DLQDuplicates", Reason: "not longer than WorkerAckWait: a dead letter published again by the redelivery after a crash would not be de-duplicated"}
	}
	if c.Replicas < 1 || c.Replicas > 5 {
		return &ConfigError{Field: "Replicas", Reason: "must be 1..5"}
	}
	if c.WorkerMaxAckPending < 1 {
		return &ConfigError{Field: "WorkerMaxAckPending", Reason: "must be at least 1"}
	}
	if c.ReplayerMaxAckPending < 1 {
		return &ConfigError{Field: "ReplayerMaxAckPending", Reason: "must be at least 1"}
	}
	return nil
}
