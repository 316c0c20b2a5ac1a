package worker

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// heartbeat sends InProgress() every interval so a long invocation is never
// redelivered to a second worker while this one runs it. It is a timer that
// re-arms itself: an in-flight invocation costs no goroutine and no ticker
// for it between beats.
type heartbeat struct {
	msg jetstream.Msg
	// every is the interval, read at each arming: the worker follows a
	// consumer AckWait that changed while the invocation runs.
	every func() time.Duration

	mu      sync.Mutex
	t       *time.Timer
	stopped bool
}

func startHeartbeat(msg jetstream.Msg, every func() time.Duration) *heartbeat {
	h := &heartbeat{msg: msg, every: every}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.t = time.AfterFunc(h.interval(), h.beat)
	return h
}

// interval is every's answer, at least 1 ms: a consumer's AckWait under
// 3 ns would make it 0 and the timer spin.
func (h *heartbeat) interval() time.Duration { return max(h.every(), time.Millisecond) }

// beat runs on the timer's goroutine.
func (h *heartbeat) beat() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return
	}
	_ = h.msg.InProgress()
	h.t.Reset(h.interval())
}

// stop ends the heartbeat: no InProgress is sent once it has returned.
func (h *heartbeat) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	h.t.Stop()
}

// beatingMsg is the message of a job while its heartbeat runs: every way
// of ending the delivery stops the heartbeat first, so no InProgress can
// follow a Nak (which would turn its delay into a whole AckWait: the
// library's "already acknowledged" check races with a beat that passed
// it a moment before).
type beatingMsg struct {
	jetstream.Msg
	hb *heartbeat
}

// Ack implements jetstream.Msg.
func (m beatingMsg) Ack() error { m.hb.stop(); return m.Msg.Ack() }

// DoubleAck implements jetstream.Msg.
func (m beatingMsg) DoubleAck(ctx context.Context) error { m.hb.stop(); return m.Msg.DoubleAck(ctx) }

// Nak implements jetstream.Msg.
func (m beatingMsg) Nak() error { m.hb.stop(); return m.Msg.Nak() }

// NakWithDelay implements jetstream.Msg.
func (m beatingMsg) NakWithDelay(d time.Duration) error { m.hb.stop(); return m.Msg.NakWithDelay(d) }

// Term implements jetstream.Msg.
func (m beatingMsg) Term() error { m.hb.stop(); return m.Msg.Term() }

// TermWithReason implements jetstream.Msg.
func (m beatingMsg) TermWithReason(reason string) error {
	m.hb.stop()
	return m.Msg.TermWithReason(reason)
}
