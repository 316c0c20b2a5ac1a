package worker

import (
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// heartbeat sends InProgress() every interval so a long invocation is never
// redelivered to a second worker while this one runs it. Its goroutine also
// watches for the reasons to stop the run at its next step boundary (see
// watch), so an in-flight invocation costs the worker one goroutine and one
// ticker less than a watcher of its own would.
type heartbeat struct {
	done    chan struct{}
	watches chan stopWatch
	wg      sync.WaitGroup
}

// stopWatch is what the heartbeat's goroutine watches once the run holds
// its session lock: stop is closed when shutdown or lost is, and then, for
// lost, onLost is called (after the close, so whoever sees its effect sees
// the run stopping).
type stopWatch struct {
	shutdown, lost <-chan struct{}
	onLost         func()
	stop           chan struct{}
}

func startHeartbeat(msg jetstream.Msg, interval time.Duration) *heartbeat {
	h := &heartbeat{done: make(chan struct{}), watches: make(chan stopWatch)}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		var sw stopWatch // nil channels until watch: never ready
		for {
			select {
			case <-h.done:
				return
			case <-t.C:
				_ = msg.InProgress()
			case sw = <-h.watches:
			case <-sw.shutdown:
				close(sw.stop)
				sw = stopWatch{}
			case <-sw.lost:
				close(sw.stop)
				sw.onLost()
				sw = stopWatch{}
			}
		}
	}()
	return h
}

// watch has the heartbeat close sw.stop when sw.shutdown or sw.lost is
// closed, until stop. Only the heartbeat closes sw.stop; call watch once,
// before stop.
func (h *heartbeat) watch(sw stopWatch) { h.watches <- sw }

func (h *heartbeat) stop() {
	close(h.done)
	h.wg.Wait()
}
