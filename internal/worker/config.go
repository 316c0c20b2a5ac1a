package worker

import (
	"errors"
	"math/rand/v2"
	"time"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Config tunes one worker process. Zero fields take the defaults of
// WithDefaults.
type Config struct {
	// Name identifies the worker in logs, lock owners and DLQ entries.
	// Required.
	Name string
	// Concurrency is the number of invocations run at once (default 8).
	Concurrency int
	// MaxDeliveries: an invocation started this often without finishing
	// (crashes, stops, lost locks, a session or invocation store failing
	// mid-run) is dead-lettered on its next delivery (default 5).
	// Deliveries put back before a run starts (a busy session, a fleet
	// cooldown, the worker's own stores down at the enter step) do not
	// count, nor do runs the fleet cooldown or an idempotency store outage
	// ended: their attempt is given back, unless the invocation store
	// cannot take that write either (then the run counts). A run a session
	// store error ended counts: the worker cannot tell it from a session
	// the store refuses for its content, which would otherwise come back
	// for ever. A run that waited out another owner's claim of a tool call
	// (idempotency.ErrInProgress) is given back only 2×MaxDeliveries times
	// per replay generation, then counts: an owner whose tool never returns
	// keeps its claim for ever. A request whose invocation record exists
	// that reaches a worker without its agent is put back until its
	// MaxDeliveries-th delivery, then refused (see Worker.unknownAgent).
	MaxDeliveries int
	// AckWait is the consumer's AckWait; heartbeats go every AckWait/3
	// (default 60s). The worker follows the consumer's own AckWait when
	// that is shorter: New reads it, and Run reads it again every
	// ConsumerCheckInterval (another process's streams.Ensure may have
	// lowered it since).
	AckWait time.Duration
	// ConsumerCheckInterval is how often Run reads the consumer's AckWait
	// again (default 10s).
	ConsumerCheckInterval time.Duration
	// DrainTimeout is how long in-flight invocations may finish after the
	// run context ends, before they are stopped at a step boundary and
	// Nak'ed (default 25s).
	DrainTimeout time.Duration
	// BusyDelay is the NakWithDelay for a busy session, jittered to
	// [BusyDelay/2, 3·BusyDelay/2) (default 2s; see BusyRequeueAfter).
	BusyDelay time.Duration
	// BusyRequeueAfter: a message that finds its session busy on its
	// BusyRequeueAfter-th delivery or later is requeued instead of Nak'ed:
	// a copy goes to the end of the requests stream and the message is
	// acked (default 3: two BusyDelay waits first). A Nak'ed message keeps
	// its slot of the consumer's MaxAckPending while it waits, so a burst
	// for one session would otherwise hold them all and stall every other
	// session (see Worker.requeueBusy). Negative: never requeue (always
	// NakWithDelay).
	BusyRequeueAfter int
	// InfraBackoffMax caps the NakWithDelay when the worker's own stores
	// fail: 1s doubling per delivery up to this (default 30s).
	InfraBackoffMax time.Duration
	// SessionLease is the session lock lease, renewed at a third of it
	// (default 30s). A crashed worker's sessions are free again after it.
	SessionLease time.Duration
	// MaxRequestBytes is the request size limit (default
	// envelope.DefaultMaxSize; less when the server's max_payload leaves a
	// dead letter less room, see dlq.MaxWholeRequest).
	MaxRequestBytes int
	// FetchWait is how long one fetch waits for messages (default 2s).
	FetchWait time.Duration
	// CooldownCheckInterval is how long the worker reuses a model's
	// cooldown status (Deps.Cooldown) before asking again: a cooldown that
	// opens is seen at most this late, and the model decorator still
	// refuses calls while it is open (default 1s, the cooldown package's
	// default CheckInterval). Negative: ask before every invocation.
	CooldownCheckInterval time.Duration
}

// WithDefaults returns c with zero fields set to defaults.
func (c Config) WithDefaults() Config {
	set := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if c.Concurrency == 0 {
		c.Concurrency = 8
	}
	if c.MaxDeliveries == 0 {
		c.MaxDeliveries = 5
	}
	if c.BusyRequeueAfter == 0 {
		c.BusyRequeueAfter = 3
	}
	set(&c.AckWait, 60*time.Second)
	set(&c.ConsumerCheckInterval, 10*time.Second)
	set(&c.DrainTimeout, 25*time.Second)
	set(&c.BusyDelay, 2*time.Second)
	set(&c.InfraBackoffMax, 30*time.Second)
	set(&c.SessionLease, 30*time.Second)
	set(&c.FetchWait, 2*time.Second)
	set(&c.CooldownCheckInterval, time.Second)
	if c.MaxRequestBytes == 0 {
		c.MaxRequestBytes = envelope.DefaultMaxSize
	}
	return c
}

// Validate reports unusable settings.
func (c Config) Validate() error {
	var errs []error
	if c.Name == "" {
		errs = append(errs, errors.New("worker: Name is required"))
	}
	if c.Concurrency < 1 {
		errs = append(errs, errors.New("worker: Concurrency must be at least 1"))
	}
	if c.MaxDeliveries < 1 {
		errs = append(errs, errors.New("worker: MaxDeliveries must be at least 1"))
	}
	if c.BusyRequeueAfter == 1 {
		// The copy of a requeue is delivered at once, with no delay: it
		// must wait BusyDelay at least once before it is requeued again.
		errs = append(errs, errors.New("worker: BusyRequeueAfter 1 would requeue a busy session's message without any wait (a spin): want 2 or more, or negative to never requeue"))
	}
	if c.AckWait < 3*time.Second {
		errs = append(errs, errors.New("worker: AckWait must be at least 3s"))
	}
	return errors.Join(errs...)
}

// infraDelay is the NakWithDelay for the n-th delivery when the worker's own
// infrastructure failed: 1s, 2s, 4s … capped.
func (c Config) infraDelay(delivered int) time.Duration {
	d := time.Second
	for i := 1; i < delivered && d < c.InfraBackoffMax; i++ {
		d *= 2
	}
	if d > c.InfraBackoffMax {
		d = c.InfraBackoffMax
	}
	return d
}

// busyNakDelay is the NakWithDelay for a busy session: BusyDelay jittered
// uniformly to [BusyDelay/2, 3·BusyDelay/2), so the messages of one session
// turned away at the same moment do not all come back at the same moment.
func (c Config) busyNakDelay() time.Duration {
	if c.BusyDelay <= 0 {
		return c.BusyDelay
	}
	return c.BusyDelay/2 + rand.N(c.BusyDelay)
}
