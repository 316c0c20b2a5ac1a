package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/internal/cooldown"
	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// Deps are the parts a worker runs with. All are required except Logger
// and Metrics.
type Deps struct {
	JS      jetstream.JetStream // JS is the JetStream context the worker consumes and publishes with.
	Streams streams.Config      // Streams names the streams, subjects and consumers.
	// Agents maps an agent name (the request's "agent") to its runner.
	Agents      map[string]*agent.Runner
	Locker      session.Locker          // Locker serialises invocations of one session.
	Invocations session.InvocationStore // Invocations records finished invocations for de-duplication.
	// Gate, if set, enters and finishes invocations over Locker's locks and
	// Invocations' records in fewer round trips (redissession.Gate); it
	// must work on the same storage. Default: session.NewGate(Locker,
	// Invocations).
	Gate session.Gate
	DLQ  *dlq.Publisher // DLQ publishes dead-letter entries.
	// Cooldown, if set, is asked before an invocation starts: while the
	// agent's model is cooling down fleet-wide the message goes back with a
	// delay without counting as a run. The worker asks it through a
	// cooldown.StatusCache: at most once per Config.CooldownCheckInterval
	// per model, not once per message.
	Cooldown CooldownStatus
	Logger   zerolog.Logger // Logger is the worker's logger (optional).
	Metrics  *Metrics       // Metrics, if non-nil, records worker metrics.
}

// CooldownStatus reports the end of a model's open cooldown (the zero time
// when none is open). internal/cooldown's stores implement it.
type CooldownStatus interface {
	Status(ctx context.Context, model string) (time.Time, error)
}

// Worker consumes requests and runs invocations.
type Worker struct {
	cfg  Config
	deps Deps
	log  zerolog.Logger
	cons jetstream.Consumer // bound in New; Run binds again when it is gone
	// cool caches Deps.Cooldown's answers (nil without Deps.Cooldown).
	cool *cooldown.StatusCache
	gate session.Gate // deps.Gate or the sequential one
	// ready is what Ready reports; Run sets it.
	ready readiness
	// pause waits between failed fetches (sleepCtx; tests record it).
	pause func(ctx context.Context, d time.Duration)

	// stopping is canceled after the drain timeout (Stop): running
	// invocations stop at their next step boundary.
	stopping context.Context
	stopRuns context.CancelFunc
	wg       sync.WaitGroup
	// ackWait is AckWait's value (nanoseconds).
	ackWait atomic.Int64
	// beats are the heartbeats of the invocations running now:
	// followAckWait re-arms them when the AckWait goes down.
	beats liveHeartbeats
	// panics counts the panics this worker had on each message (by stream
	// sequence; see afterPanic).
	panics seqCounts
	// noAgent counts the times this worker put each message back for want
	// of its agent (unknownAgent).
	noAgent seqCounts
	// counted remembers the DLQ entries this worker counted (countEntry).
	counted countedEntries
}

// notePanic counts a panic on the message at stream sequence seq and
// returns this worker's count for it.
func (w *Worker) notePanic(seq uint64) int { return w.panics.note(seq) }

// panicCount returns this worker's count of panics on the message at
// stream sequence seq.
func (w *Worker) panicCount(seq uint64) int { return w.panics.count(seq) }

// forgetPanics drops the count of the message at seq.
func (w *Worker) forgetPanics(seq uint64) { w.panics.forget(seq) }

// New checks the configuration and binds to the worker consumer (which must
// exist: streams.Ensure creates it).
func New(ctx context.Context, cfg Config, deps Deps) (*Worker, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.JS == nil || deps.Locker == nil || deps.Invocations == nil || deps.DLQ == nil || len(deps.Agents) == 0 {
		return nil, errors.New("worker: JS, Locker, Invocations, DLQ and at least one agent are required")
	}
	for name, r := range deps.Agents {
		if r == nil {
			return nil, fmt.Errorf("worker: agent %q has no runner", name)
		}
		if err := r.CheckTools(); err != nil {
			return nil, fmt.Errorf("worker: agent %q: %w", name, err)
		}
	}
	sc := deps.Streams.WithDefaults()
	deps.Streams = sc
	var cool *cooldown.StatusCache
	if deps.Cooldown != nil {
		var cached bool
		if cool, cached = deps.Cooldown.(*cooldown.StatusCache); !cached {
			cool = cooldown.NewStatusCache(deps.Cooldown, cfg.CooldownCheckInterval)
		}
	}
	cons, err := deps.JS.Consumer(ctx, sc.RequestsStream, sc.WorkerConsumer)
	if err != nil {
		return nil, fmt.Errorf("worker: bind consumer %s/%s: %w", sc.RequestsStream, sc.WorkerConsumer, err)
	}
	gate := deps.Gate
	if gate == nil {
		gate = session.NewGate(deps.Locker, deps.Invocations)
	}
	stopping, stopRuns := context.WithCancel(context.Background())
	w := &Worker{
		pause: sleepCtx,
		cfg:   cfg,
		deps:  deps,
		gate:  gate,
		log:   deps.Logger, // carries the worker name (internal/app adds it to every line)
		cons:  cons,
		cool:  cool,

		stopping: stopping,
		stopRuns: stopRuns,
	}
	// Heartbeats must come within the consumer's AckWait as the server
	// has it (the last streams.Ensure set it, maybe another process's), not
	// only as this worker was told: a shorter one would redeliver running
	// invocations to another worker. Run reads it again while it runs.
	w.ackWait.Store(int64(cfg.AckWait))
	if info := cons.CachedInfo(); info != nil {
		w.followAckWait(info.Config.AckWait)
	}
	return w, nil
}

// AckWait is the AckWait the worker's heartbeats follow (one every third of
// it): its configured one, or the worker consumer's when that was shorter
// when it was last read (in New, then every ConsumerCheckInterval).
func (w *Worker) AckWait() time.Duration { return time.Duration(w.ackWait.Load()) }

func (w *Worker) heartbeatInterval() time.Duration { return w.AckWait() / 3 }

// followAckWait makes the heartbeats follow the consumer's AckWait as the
// server has it, when it is shorter than the configured one: the last
// streams.Ensure set it, maybe another process's, and a running
// invocation heartbeated less often than that is redelivered to another
// worker. It follows it back up to the configured one.
//
// When the value goes down, the heartbeats of the invocations running now
// beat at once and re-arm at the new interval: each reads the interval only
// when it re-arms, and one armed at the old, longer one would fire after the
// new AckWait (found in review, twentieth session: the server redelivered
// the running invocation meanwhile). Going up needs nothing: a beat armed
// at the shorter interval only comes early.
func (w *Worker) followAckWait(consumer time.Duration) {
	want := w.cfg.AckWait
	if consumer > 0 && consumer < want {
		want = consumer
	}
	old := time.Duration(w.ackWait.Swap(int64(want)))
	if old == want {
		return
	}
	w.log.Warn().Dur("ack_wait", w.cfg.AckWait).Dur("consumer_ack_wait", consumer).Dur("heartbeat_every", want/3).
		Str("consumer", w.deps.Streams.WorkerConsumer).Msg("heartbeats follow the consumer's AckWait where it is shorter than this worker's")
	if want < old {
		w.beats.rearmAll()
	}
}

// watchConsumer reads the consumer's AckWait every ConsumerCheckInterval
// until ctx ends, also while every slot is busy (when running invocations
// need their heartbeats most). A failed read is tried at the next tick;
// the fetches report a consumer that is gone. It looks the consumer up by
// name: Run's loop owns w.cons.
func (w *Worker) watchConsumer(ctx context.Context) {
	t := time.NewTicker(w.cfg.ConsumerCheckInterval)
	defer t.Stop()
	sc := w.deps.Streams
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if cons, err := w.deps.JS.Consumer(ictx, sc.RequestsStream, sc.WorkerConsumer); err == nil {
			if info := cons.CachedInfo(); info != nil {
				w.followAckWait(info.Config.AckWait)
			}
		}
		cancel()
	}
}

// Run fetches and handles messages until ctx ends, then drains: it stops
// fetching (Ready reports ErrDraining from then on), lets in-flight
// invocations finish for DrainTimeout, then asks the rest to stop at their
// next step boundary (they are Nak'ed so another worker resumes them) and
// waits for them. It returns nil after a clean drain.
//
// A failed fetch does not end Run: the worker reports not ready (Ready),
// logs the failure at warning level (at most once every 30s), waits a
// delay growing from 0.5s to 15s between attempts, and when the consumer
// is gone (deleted, or the stream re-created without it) binds to it again,
// re-creating it with Deps.Streams' configuration if it does not exist.
// The first fetch that succeeds makes it ready again.
func (w *Worker) Run(ctx context.Context) error {
	defer w.ready.set(ErrStopped)
	slots := make(chan struct{}, w.cfg.Concurrency)
	for range w.cfg.Concurrency {
		slots <- struct{}{}
	}
	// Invocations run on their own context: SIGTERM must not abort a model
	// or tool call half-way. It is cancelled only if they ignore the stop.
	runCtx, cancelRuns := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRuns()
	// A fixed set of handler goroutines, one per slot: an invocation's call
	// chain is deep, and a new goroutine per message grew its stack again
	// for every message (8 % of the worker's CPU under load).
	work := make(chan jetstream.Msg)
	for range w.cfg.Concurrency {
		w.wg.Go(func() {
			for msg := range work {
				w.handleSafely(runCtx, msg)
				slots <- struct{}{}
			}
		})
	}

	// The drain's clock starts at the stop, not when the last pull ends.
	var stoppedAt atomic.Int64
	defer context.AfterFunc(ctx, func() { stoppedAt.Store(time.Now().UnixNano()) })()

	w.log.Info().Int("concurrency", w.cfg.Concurrency).Msg("worker consuming")
	health := newFetchHealth()
	watchCtx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { defer close(watched); w.watchConsumer(watchCtx) }()
	defer func() { stopWatch(); <-watched }()
	for ctx.Err() == nil {
		// Wait for at least one free slot, then take every free one.
		select {
		case <-ctx.Done():
			continue
		case <-slots:
		}
		n := 1
	take:
		for n < w.cfg.Concurrency {
			select {
			case <-slots:
				n++
			default:
				break take
			}
		}
		// Not cut short by the stop (see fetch): shutdown waits for the
		// pull, at most FetchWait.
		fctx, cancelFetch := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.FetchWait)
		got, err := w.fetch(fctx, ctx, n, work) // each message handed over holds one of the n slots
		cancelFetch()
		for range n - got {
			slots <- struct{}{}
		}
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			w.fetchFailed(ctx, health, err)
			continue
		}
		w.fetchSucceeded(health)
	}
	w.ready.set(ErrDraining)
	close(work) // the handlers finish what they hold, then exit

	// Drain.
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	w.log.Info().Dur("drain_timeout", w.cfg.DrainTimeout).Msg("stopping: draining in-flight invocations")
	left := w.cfg.DrainTimeout
	if at := stoppedAt.Load(); at != 0 {
		left -= time.Since(time.Unix(0, at))
	}
	timer := time.NewTimer(max(left, 0))
	defer timer.Stop()
	select {
	case <-done:
		w.log.Info().Msg("drained")
		return nil
	case <-timer.C:
	}
	w.log.Warn().Msg("drain timeout: stopping invocations at their next step boundary")
	w.Stop()
	// A step boundary comes within one model or tool call; then give up:
	// cancel what still runs (a tool ignoring its context). Its message is
	// Nak'ed if it returns in time, else redelivered after AckWait. Either
	// way nothing is lost, and shutdown stays within DrainTimeout + 10s.
	select {
	case <-done:
		return nil
	case <-time.After(5 * time.Second):
	}
	cancelRuns()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		w.log.Warn().Msg("invocations still running after cancel; their messages are redelivered after AckWait")
	}
	return nil
}

// Stop asks running invocations to stop at their next step boundary. Run
// calls it after the drain timeout; tests may call it directly.
func (w *Worker) Stop() { w.stopRuns() }

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
