package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/streams"
)

// ErrDraining is what Ready reports once Run's context has ended: the worker
// fetches no new requests and finishes (or stops) the invocations it holds.
var ErrDraining = errors.New("worker: draining: fetching no new requests")

// ErrStopped is what Ready reports after Run has returned.
var ErrStopped = errors.New("worker: stopped")

// Fetch retry timing: after a failed fetch the worker waits
// fetchRetryInitial, doubling (with jitter) up to fetchRetryMax, and logs
// the failure at most once per fetchLogEvery.
const (
	fetchRetryInitial = 500 * time.Millisecond
	fetchRetryMax     = 15 * time.Second
	fetchLogEvery     = 30 * time.Second
)

// readiness is the worker's answer to Ready.
type readiness struct {
	mu  sync.Mutex
	err error
}

func (r *readiness) set(err error) {
	r.mu.Lock()
	r.err = err
	r.mu.Unlock()
}

func (r *readiness) get() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Ready reports whether the worker consumes requests: nil from New on while
// its fetches succeed; once a fetch fails (the consumer was deleted or the
// stream re-created without it, JetStream cannot serve the consumer), an
// error wrapping the last failure until a fetch succeeds again; ErrDraining
// once Run's context has ended; ErrStopped after Run has returned. A
// readiness probe (/readyz) reports it, so a worker that consumes nothing
// is seen.
func (w *Worker) Ready() error { return w.ready.get() }

// fetchHealth is Run's state across failing fetches.
type fetchHealth struct {
	bo         *backoff.ExponentialBackOff
	failures   int       // consecutive failed fetches
	since      time.Time // when the current run of failures began
	lastLog    time.Time // when a failure was last logged (across runs of failures)
	suppressed int       // failures not logged since lastLog
	runLogged  bool      // a failure of the current run was logged
}

func newFetchHealth() *fetchHealth {
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval, bo.Multiplier, bo.MaxInterval, bo.MaxElapsedTime = fetchRetryInitial, 2, fetchRetryMax, 0
	bo.Reset()
	return &fetchHealth{bo: bo}
}

// fetch pulls up to n messages within ctx and hands each to work (a
// handler is free for each: the caller holds n slots). It returns how many
// it handed over and the error that ended the pull, nil when it ended the
// ordinary way (messages, none before the wait ran out, ctx ended).
//
// stop is the worker's own context. The pull does not end with it: a pull
// cut short drops what the server had already sent it, and those messages
// would wait out AckWait before anyone got them. So the pull runs to its
// wait, and a message that arrives once the worker is stopping is Nak'ed
// for another worker instead of being started, with a delay of one pull's
// wait so that it is not handed back to this pull.
func (w *Worker) fetch(ctx, stop context.Context, n int, work chan<- jetstream.Msg) (int, error) {
	batch, err := w.cons.Fetch(n, jetstream.FetchContext(ctx))
	if err != nil {
		return 0, err
	}
	got := 0
	for msg := range batch.Messages() {
		if stop.Err() != nil {
			// Delayed past this pull's wait: a plain Nak would hand it
			// straight back to this same pull (found in review).
			_ = msg.NakWithDelay(w.cfg.FetchWait)
			continue
		}
		got++
		work <- msg
	}
	if err := batch.Error(); err != nil && !ordinaryFetchEnd(err) {
		return got, err
	}
	return got, nil
}

// ordinaryFetchEnd reports an error that ends a pull without anything being
// wrong: its wait ran out, nothing was pending, or its context ended.
func ordinaryFetchEnd(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, jetstream.ErrNoMessages) || errors.Is(err, nats.ErrTimeout)
}

// consumerGone reports a fetch error that means the worker consumer is not
// there to serve the pull: nobody answers its subject (deleted, or the
// stream re-created without it), the server deleted it during the pull, or
// it or its stream is not found.
func consumerGone(err error) bool {
	return errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, jetstream.ErrConsumerDeleted) ||
		errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound)
}

// fetchFailed handles a failed fetch: the worker reports not ready; when
// the consumer is gone it binds to it again, re-creating it with the
// fleet's configuration if it does not exist; it logs the failure (at most
// once per fetchLogEvery) and waits a growing delay before the next fetch,
// so a server that cannot serve the pull is not hammered. It returns early
// when ctx ends.
func (w *Worker) fetchFailed(ctx context.Context, h *fetchHealth, err error) {
	sc := w.deps.Streams
	now := time.Now()
	if h.failures == 0 {
		h.since = now
	}
	h.failures++
	gone := consumerGone(err)
	var restoreErr error
	if gone {
		restoreErr = w.rebind(ctx)
		if ctx.Err() != nil {
			return
		}
	}
	notReady := fmt.Errorf("worker: cannot fetch from consumer %s on stream %s: %w", sc.WorkerConsumer, sc.RequestsStream, err)
	if restoreErr != nil {
		notReady = fmt.Errorf("%w; %w", notReady, restoreErr)
	}
	w.ready.set(notReady)
	delay := h.bo.NextBackOff()
	// One line per fetchLogEvery, also when fetches fail and recover in
	// turn (a flapping server), not one per attempt.
	if h.lastLog.IsZero() || now.Sub(h.lastLog) >= fetchLogEvery {
		ev := w.log.Warn().Err(err).Str("stream", sc.RequestsStream).Str("consumer", sc.WorkerConsumer).Bool("consumer_gone", gone)
		if restoreErr != nil {
			ev = ev.AnErr("restore_error", restoreErr)
		}
		ev.Int("failures", h.failures).Int("not_logged", h.suppressed).Dur("failing_for", now.Sub(h.since)).Dur("retry_in", delay).
			Msg("fetch ended with an error: this worker consumes nothing until a fetch succeeds")
		h.lastLog, h.suppressed, h.runLogged = now, 0, true
	} else {
		h.suppressed++
	}
	w.pause(ctx, delay)
}

// fetchSucceeded ends a run of failed fetches: the worker is ready again.
// The recovery is logged when a failure of the run was.
func (w *Worker) fetchSucceeded(h *fetchHealth) {
	if h.failures == 0 {
		return
	}
	// Ready first, then the line: whoever reads the line (an operator, a
	// test's log watch) and then asks Ready must see the worker ready.
	w.ready.set(nil)
	if h.runLogged {
		w.log.Info().Int("failures", h.failures).Dur("failed_for", time.Since(h.since)).
			Msg("fetching again: the worker consumes requests")
	}
	h.failures, h.runLogged = 0, false
	h.bo.Reset()
}

// rebind binds the worker to its consumer again, creating it with the
// fleet's configuration (streams.EnsureWorkerConsumer, as streams.Ensure
// does at start-up) when it does not exist. A missing requests stream is
// not re-created here: that is a deliberate act, or streams.Ensure's at
// the next start-up.
func (w *Worker) rebind(ctx context.Context) error {
	sc := w.deps.Streams
	cons, err := w.deps.JS.Consumer(ctx, sc.RequestsStream, sc.WorkerConsumer)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		cons, err = streams.EnsureWorkerConsumer(ctx, w.deps.JS, sc)
		if err == nil {
			w.log.Warn().Str("stream", sc.RequestsStream).Str("consumer", sc.WorkerConsumer).
				Msg("the worker consumer was gone; re-created it with this worker's configuration")
		}
	}
	if err != nil {
		return fmt.Errorf("worker: restore consumer %s on stream %s: %w", sc.WorkerConsumer, sc.RequestsStream, err)
	}
	w.cons = cons
	if info := cons.CachedInfo(); info != nil {
		w.followAckWait(info.Config.AckWait)
	}
	return nil
}
