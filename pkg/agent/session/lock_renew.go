package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Renewer renews a Lease in the background until it is stopped or the lease
// is lost. Create it with KeepAlive; always call Stop.
type Renewer struct {
	cancel context.CancelFunc
	start  *time.Timer // starts the loop at the first renewal
	done   chan struct{}
	lost   chan struct{}
	// lostCtx is canceled with lost closed, for AfterLost.
	lostCtx    context.Context
	cancelLost context.CancelFunc

	mu    sync.Mutex
	lease Lease
	err   error
}

// KeepAlive starts renewing lease with l every interval (lease.TTL/3 when
// interval is not positive), each time for lease.TTL. It stops when Stop is
// called, when ctx ends, or when the lease is lost: Renew returned
// ErrNotOwner, or renewals kept failing until the lease ran out. On a loss
// Lost is closed and Err says why; the holder must then stop at the next
// step boundary, since another invocation may take the session over.
//
// Nothing runs before the first renewal is due (or the lease's end, if
// that comes first): a timer starts the renewing goroutine then, so a
// holder that finishes within one interval (most invocations) costs a
// timer, not a goroutine and a ticker.
func KeepAlive(ctx context.Context, l Locker, lease *Lease, interval time.Duration) *Renewer {
	if interval <= 0 {
		interval = lease.TTL / 3
	}
	if interval <= 0 {
		interval = time.Millisecond
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &Renewer{cancel: cancel, done: make(chan struct{}), lost: make(chan struct{}), lease: *lease}
	r.lostCtx, r.cancelLost = context.WithCancel(context.Background())
	// The loop starts when the first renewal is due, or at the lease's end
	// if that comes first (a slow Enter can hand over a lease with less
	// than an interval left): from then on it reports the loss on time.
	first := min(interval, time.Until(lease.Expires))
	renewFirst := first == interval
	r.start = time.AfterFunc(max(first, 0), func() { r.run(ctx, l, interval, renewFirst) })
	return r
}

// run renews every interval, and at once when renewNow (the first renewal
// is due), on the goroutine of the start timer's function.
func (r *Renewer) run(ctx context.Context, l Locker, interval time.Duration, renewNow bool) {
	defer close(r.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	// The lease runs out at its Expires unless a renewal lands first. A
	// renewal runs on its own goroutine so that this is noticed while a
	// call still hangs: on a stalled connection a call can outlast its
	// context (go-redis bounds it by the client's read timeout, not the
	// caller's deadline). At most one runs at a time; the loop waits for
	// it before it ends, so nothing outlives Stop.
	expire := time.NewTimer(time.Until(r.Lease().Expires))
	defer expire.Stop()
	type renewal struct {
		next *Lease
		err  error
	}
	var pending chan renewal
	defer func() {
		if pending != nil {
			<-pending
		}
	}()
	var lastErr error = errors.New("no renewal answered")
	renew := func() chan renewal {
		cur := r.Lease()
		callCtx, cancel := context.WithDeadline(ctx, cur.Expires)
		out := make(chan renewal, 1)
		go func() {
			defer cancel()
			next, err := l.Renew(callCtx, cur.Key, cur.Owner, cur.TTL)
			out <- renewal{next, err}
		}()
		return out
	}
	if renewNow && ctx.Err() == nil {
		pending = renew()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-expire.C:
			select {
			case res := <-pending: // answered at the same moment: a success still counts
				pending = nil
				if res.err == nil {
					r.mu.Lock()
					r.lease = *res.next
					r.mu.Unlock()
					expire.Reset(time.Until(res.next.Expires))
					continue
				}
				lastErr = res.err
			default:
			}
			r.fail(fmt.Errorf("session: lease expired while renewals failed: %w", lastErr))
			return
		case <-t.C:
			if pending != nil {
				continue // the last renewal has not answered yet
			}
			pending = renew()
		case res := <-pending:
			pending = nil
			switch err := res.err; {
			case err == nil:
				r.mu.Lock()
				r.lease = *res.next
				r.mu.Unlock()
				expire.Reset(time.Until(res.next.Expires))
			case ctx.Err() != nil:
				return // stopped while renewing: not a loss
			case errors.Is(err, ErrNotOwner):
				r.fail(err)
				return
			default:
				// A transient renewal error with time left on the lease:
				// try again at the next tick (expire reports the loss).
				lastErr = err
			}
		}
	}
}

func (r *Renewer) fail(err error) {
	r.mu.Lock()
	r.err = err
	r.mu.Unlock()
	close(r.lost)
	r.cancelLost()
}

// Lease returns the lease as last renewed.
func (r *Renewer) Lease() Lease {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lease
}

// Lost is closed when the lease is lost.
func (r *Renewer) Lost() <-chan struct{} { return r.lost }

// AfterLost arranges for f to run on its own goroutine once the lease is
// lost (after Lost is closed and Err set), without a goroutine waiting
// for it meanwhile. The returned function stops that; it reports whether
// it stopped f from running (see context.AfterFunc).
func (r *Renewer) AfterLost(f func()) (stop func() bool) {
	return context.AfterFunc(r.lostCtx, f)
}

// Err returns why the lease was lost, or nil.
func (r *Renewer) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Stop stops renewing and waits until the background goroutine, if the
// first renewal started it, has ended. It does not release the lock. It
// returns Err. Calling Stop again is safe.
func (r *Renewer) Stop() error {
	r.cancel()
	if r.start.Stop() {
		// The timer had not fired: the loop never ran, and never will
		// (only the first Stop can stop the timer).
		close(r.done)
	}
	<-r.done
	return r.Err()
}
