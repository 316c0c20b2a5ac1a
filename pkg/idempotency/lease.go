package idempotency

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrLeaseExpired is the cause of a running tool's context cancellation when
// its lease could not be renewed in time (the store was unreachable): another
// owner may take the key over.
var ErrLeaseExpired = errors.New("idempotency: lease expired without renewal")

// cancelMargin is how long before an unrenewed lease's end the tool is
// cancelled: a tenth of the lease, at most 2 s.
func cancelMargin(lease time.Duration) time.Duration { return min(lease/10, 2*time.Second) }

// renewer renews one claim's lease while the tool runs.
type renewer struct {
	once  sync.Once
	start *time.Timer // starts the loop when it has something to do
	quit  chan struct{}
	done  chan struct{}
	// leaseUntil is the end of the last lease the store granted: written
	// only by the loop, read by until after stop.
	leaseUntil time.Time
}

// startRenewer renews c's lease every RenewInterval until stop. If the
// claim is lost (ErrNotOwner, ErrLeaseLost) or the lease runs out without a
// successful renewal, it cancels the tool's context with that cause: another
// owner may be running the tool, so this one should stop as soon as it can.
// After that cancel it keeps renewing until stop, and gives up only when
// the claim is lost: the cancelled tool may still be winding down (its
// downstream call in flight), and a store back before the lease ends keeps
// the key this owner's until the tool returns, instead of letting another
// owner run the effect alongside it (found in review, twenty-third
// session). Nor does it wait for the ticker then while the last granted
// lease has not ended: it renews as soon as it cancels (unless a renewal
// is in flight) and retries a failed renewal after a short backoff, as
// the next tick may come only at or after the lease's end; after that end
// it renews on the ticker again (found in review of this session's fix,
// twenty-third session).
// The first renewal is due RenewInterval after the claim's answer arrived,
// or at once when the cancel would come before that: the lease started at
// the store, so a claim answered late (a slow network, a loaded server)
// leaves less than the whole lease, and the tool must not be cancelled
// before any renewal was tried (found in review, nineteenth session). It is
// cancelled only if no renewal lands before the cancel. The goroutine
// starts only when the first renewal is due: a tool that returns before
// that (most do) costs a timer, not a goroutine, a ticker and a second
// timer.
func startRenewer(parent context.Context, c *call, leaseUntil time.Time, cancel context.CancelCauseFunc) *renewer {
	r := &renewer{quit: make(chan struct{}), done: make(chan struct{}), leaseUntil: leaseUntil}
	o := c.w.opts
	// Renewals outlive the caller's cancellation: the tool may still be
	// winding down and the claim must hold until it returns.
	ctx := context.WithoutCancel(parent)
	// The tool is cancelled shortly before the lease ends without a
	// renewal, not at the first failed renewal after that: from leaseUntil
	// another owner may claim the key, and both would run the effect. The
	// margin (a tenth of the lease, at most 2 s) covers the store's clock
	// running ahead and the tool's reaction time.
	margin := cancelMargin(o.Lease)
	cancelAt := func() time.Duration { return time.Until(r.leaseUntil) - margin }
	first := o.RenewInterval
	if cancelAt() < first {
		first = 0 // the cancel would come first: renew now
	}
	r.start = time.AfterFunc(first, func() {
		defer close(r.done)
		t := time.NewTicker(o.RenewInterval)
		defer t.Stop()
		expire := time.NewTimer(cancelAt())
		defer expire.Stop()
		expireC := expire.C // nil once the tool was cancelled
		// Once the tool is cancelled, a failed renewal is retried after
		// backoff while the last granted lease has not ended: the cancel
		// comes only a margin before that end, and the ticker's next tick
		// may come after it.
		backoff := max(min(o.RenewInterval, margin/4), 5*time.Millisecond)
		retry := time.NewTimer(backoff)
		retry.Stop()
		defer retry.Stop()
		var retryC <-chan time.Time // non-nil while a retry is due
		expired := func(cause error) {
			o.Metrics.leaseLost(c.agent, c.tool)
			cancel(fmt.Errorf("%w: %s: %w", ErrLeaseExpired, c.ticket.Key, cause))
			expireC = nil
		}
		renewed := func(until time.Time) {
			r.leaseUntil = until
			retryC = nil // renewed: the ticker is in time again
			if expireC != nil {
				expire.Reset(cancelAt()) // Go 1.23+: a fire not yet received is dropped
			}
		}
		var lastErr error = errors.New("no renewal succeeded")
		// A renewal runs on its own goroutine, so the cancel above is never
		// held back by it: a call on a stalled connection can outlast its
		// context (go-redis bounds it by the client's read timeout, not by
		// the caller's deadline). At most one runs at a time, and the loop
		// waits for it before it ends, so nothing outlives stop.
		type renewal struct {
			until time.Time
			err   error
		}
		var pending chan renewal
		defer func() {
			if pending != nil {
				if res := <-pending; res.err == nil {
					r.leaseUntil = res.until // complete may count on it
				}
			}
		}()
		renew := func() chan renewal {
			// A renewal is worth waiting for until the tool's cancel, not
			// longer; once the tool is cancelled, for a store call's time.
			timeout := o.StoreTimeout
			if expireC != nil {
				timeout = max(min(o.StoreTimeout, cancelAt()), time.Millisecond)
			}
			rctx, rcancel := context.WithTimeout(ctx, timeout)
			out := make(chan renewal, 1)
			go func() {
				defer rcancel()
				until, err := c.w.store.Renew(rctx, c.ticket, o.Lease)
				out <- renewal{until, err}
			}()
			return out
		}
		select {
		case <-r.quit:
			return
		default:
			pending = renew() // the first renewal is due now
		}
		for {
			select {
			case <-r.quit:
				return
			case <-expireC:
				select {
				case res := <-pending: // answered at the same moment: a success still counts
					pending = nil
					if res.err == nil {
						renewed(res.until)
						continue
					}
					lastErr = res.err
				default:
				}
				expired(lastErr) // and keep renewing while the tool winds down
				if pending == nil {
					pending = renew() // now, not at the next tick
				}
			case <-retryC:
				retryC = nil
				if pending == nil {
					pending = renew()
				}
			case <-t.C:
				if pending != nil {
					continue // the last renewal has not answered yet
				}
				pending = renew()
			case res := <-pending:
				pending = nil
				switch err := res.err; {
				case err == nil:
					renewed(res.until)
				case IsOwnershipError(err):
					if expireC == nil {
						// Cancelled already, and counted as lost then.
						o.Logger.Error().Err(err).Str("key", c.ticket.Key).Msg("idempotency: claim lost while the cancelled tool winds down")
						return
					}
					o.Metrics.leaseLost(c.agent, c.tool)
					o.Logger.Error().Err(err).Str("key", c.ticket.Key).Msg("idempotency: claim lost while the tool runs; cancelling it")
					cancel(err)
					return
				default:
					o.Metrics.storeError(c.agent, c.tool, "renew")
					lastErr = err
					if expireC != nil && cancelAt() <= 0 {
						expired(err)
					}
					// Retried soon only when the ticker's next renewal
					// would come too late: after a renewal that
					// succeeded since the cancel, the ticker is in time
					// again for most of the new lease (found in review
					// of this session's fix: a flapping store got a
					// renewal every backoff for a whole lease).
					if left := time.Until(r.leaseUntil); expireC == nil && left > 0 && left <= o.RenewInterval {
						retry.Reset(backoff)
						retryC = retry.C
					}
				}
			}
		}
	})
	return r
}

// until returns the end of the last lease the store granted this claim
// (the claim's own, or its last renewal's). Call it after stop.
func (r *renewer) until() time.Time { return r.leaseUntil }

// stop stops renewing and waits for the goroutine, if it started, to end.
// Safe to call twice.
func (r *renewer) stop() {
	r.once.Do(func() {
		close(r.quit)
		if r.start.Stop() {
			close(r.done) // the loop never ran, and never will
		}
	})
	<-r.done
}
