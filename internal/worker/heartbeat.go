package worker

import (
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// heartbeat sends InProgress() every interval so a long invocation is never
// redelivered to a second worker while this one runs it.
type heartbeat struct {
	done chan struct{}
	wg   sync.WaitGroup
}

func startHeartbeat(msg jetstream.Msg, interval time.Duration) *heartbeat {
	h := &heartbeat{done: make(chan struct{})}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-h.done:
				return
			case <-t.C:
				_ = msg.InProgress()
			}
		}
	}()
	return h
}

func (h *heartbeat) stop() {
	close(h.done)
	h.wg.Wait()
}
