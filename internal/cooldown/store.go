package cooldown

import (
	"context"
	"fmt"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// Store keeps the shared breaker state. Implementations: Redis (the fleet)
// and Memory (one process: tests and embedded mode).
type Store interface {
	// Record counts one attempt of model, failed with a transient class or
	// not, and opens the cooldown when the window's failure share crosses
	// the threshold. It returns the cooldown's end if one is open after the
	// call. While a cooldown is open nothing is counted (the attempts then
	// are calls that were in flight when it opened), and opening it empties
	// the window: after it ends the window starts afresh, so only MinCalls
	// new attempts can open it again, never a success just after the end.
	Record(ctx context.Context, model string, transient bool) (until time.Time, err error)
	// Status returns the end of the model's open cooldown, or the zero time.
	Status(ctx context.Context, model string) (until time.Time, err error)
}

// OpenError is returned instead of calling a model whose cooldown is open.
// The worker puts the message back with a delay until Until; it is not a
// failure of the invocation and is never dead-lettered.
type OpenError struct {
	Model string    // Model is the model that is cooling down.
	Until time.Time // Until is when the cooldown ends.
}

// Error implements error.
func (e *OpenError) Error() string {
	return fmt.Sprintf("cooldown: model %s is cooling down until %s", e.Model, e.Until.UTC().Format(time.RFC3339))
}

// Is makes errors.Is(err, model.ErrNotSent) true: the call never reached
// the provider.
func (e *OpenError) Is(target error) bool { return target == model.ErrNotSent }

// RetryIn returns how long to wait from now, at least a second.
func (e *OpenError) RetryIn(now time.Time) time.Duration {
	d := e.Until.Sub(now)
	if d < time.Second {
		d = time.Second
	}
	return d
}
