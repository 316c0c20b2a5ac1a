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
//
// It follows a consumer AckWait that changes while the invocation runs:
// every re-arming reads the interval again, and when the worker sees the
// AckWait go down it re-arms every live heartbeat at once (liveHeartbeats:
// a beat now, then the new interval), since a timer armed at the old, longer
// interval would fire too late for the new AckWait.
type heartbeat struct {
	msg jetstream.Msg
	// every is the interval, read at each arming: the worker follows a
	// consumer AckWait that changed while the invocation runs.
	every func() time.Duration
	// live is the set it is registered in while it runs (nil: none).
	live *liveHeartbeats

	mu      sync.Mutex
	t       *time.Timer
	stopped bool
}

// startHeartbeat starts a heartbeat that is registered nowhere (see
// liveHeartbeats.start).
func startHeartbeat(msg jetstream.Msg, every func() time.Duration) *heartbeat {
	return startHeartbeatIn(nil, msg, every)
}

// startHeartbeatIn starts a heartbeat registered in live (if not nil) until
// it stops. It is registered before its first interval is read: a lowered
// AckWait is either read here or re-arms it (liveHeartbeats.rearmAll).
func startHeartbeatIn(live *liveHeartbeats, msg jetstream.Msg, every func() time.Duration) *heartbeat {
	h := &heartbeat{msg: msg, every: every, live: live}
	h.mu.Lock()
	defer h.mu.Unlock()
	if live != nil {
		live.add(h)
	}
	h.t = time.AfterFunc(h.interval(), h.beat)
	return h
}

// interval is every's answer, at least 1 ms: a consumer's AckWait under
// 3 ns would make it 0 and the timer spin.
func (h *heartbeat) interval() time.Duration { return max(h.every(), time.Millisecond) }

// beat sends an InProgress and re-arms the timer at the current interval
// (nothing once stopped). It runs on the timer's goroutine, and from rearm.
func (h *heartbeat) beat() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return
	}
	_ = h.msg.InProgress()
	h.t.Reset(h.interval())
}

// rearm beats now and re-arms the timer at the current interval: the
// interval went down, and the timer may be armed at the old one. The beat
// comes first because the time since the last one may already be close to
// the new AckWait. It is a beat out of turn.
func (h *heartbeat) rearm() { h.beat() }

// stop ends the heartbeat: no InProgress is sent once it has returned.
func (h *heartbeat) stop() {
	h.mu.Lock()
	h.stopped = true
	h.t.Stop()
	h.mu.Unlock()
	// Outside h.mu: liveHeartbeats.rearmAll takes h.mu with its own lock
	// released, never the other way round.
	if h.live != nil {
		h.live.remove(h)
	}
}

// liveHeartbeats is the set of a worker's running heartbeats, so that a
// lowered AckWait reaches those already armed (found in review, twentieth
// session: a running invocation kept the old interval until its timer
// fired, and the server redelivered it meanwhile).
type liveHeartbeats struct {
	mu  sync.Mutex
	set map[*heartbeat]struct{}
}

// start starts a heartbeat for msg registered in hs until it stops.
func (hs *liveHeartbeats) start(msg jetstream.Msg, every func() time.Duration) *heartbeat {
	return startHeartbeatIn(hs, msg, every)
}

func (hs *liveHeartbeats) add(h *heartbeat) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.set == nil {
		hs.set = map[*heartbeat]struct{}{}
	}
	hs.set[h] = struct{}{}
}

func (hs *liveHeartbeats) remove(h *heartbeat) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	delete(hs.set, h)
}

// rearmAll re-arms every live heartbeat (heartbeat.rearm). The set is
// copied first and each heartbeat re-armed without hs.mu held, so a beat
// or a stop on another goroutine never waits for the others.
func (hs *liveHeartbeats) rearmAll() {
	hs.mu.Lock()
	live := make([]*heartbeat, 0, len(hs.set))
	for h := range hs.set {
		live = append(live, h)
	}
	hs.mu.Unlock()
	for _, h := range live {
		h.rearm()
	}
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
