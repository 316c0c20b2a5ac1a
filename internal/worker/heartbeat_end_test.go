package worker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// callLog is a jetstream.Msg that records the calls that matter here;
// the embedded nil interface panics on anything else.
type callLog struct {
	jetstream.Msg
	mu    sync.Mutex
	calls []string
}

func (m *callLog) record(s string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, s)
	return nil
}

func (m *callLog) InProgress() error                { return m.record("in_progress") }
func (m *callLog) Ack() error                       { return m.record("ack") }
func (m *callLog) DoubleAck(context.Context) error  { return m.record("double_ack") }
func (m *callLog) Nak() error                       { return m.record("nak") }
func (m *callLog) NakWithDelay(time.Duration) error { return m.record("nak_with_delay") }
func (m *callLog) Term() error                      { return m.record("term") }
func (m *callLog) TermWithReason(string) error      { return m.record("term_with_reason") }

// Every way of ending a delivery through the job's message stops its
// heartbeat before the end reaches the server, so no InProgress can
// follow it (found in review, sixteenth session: a beat racing a
// NakWithDelay turned the delay into a whole AckWait).
func TestEndingADeliveryStopsItsHeartbeat(t *testing.T) {
	ends := map[string]func(jetstream.Msg) error{
		"ack":              func(m jetstream.Msg) error { return m.Ack() },
		"double_ack":       func(m jetstream.Msg) error { return m.DoubleAck(context.Background()) },
		"nak":              func(m jetstream.Msg) error { return m.Nak() },
		"nak_with_delay":   func(m jetstream.Msg) error { return m.NakWithDelay(time.Second) },
		"term":             func(m jetstream.Msg) error { return m.Term() },
		"term_with_reason": func(m jetstream.Msg) error { return m.TermWithReason("x") },
	}
	for name, end := range ends {
		t.Run(name, func(t *testing.T) {
			raw := &callLog{}
			beats := make(chan struct{}, 1)
			hb := startHeartbeat(raw, func() time.Duration {
				select {
				case beats <- struct{}{}:
				default:
				}
				return time.Millisecond
			})
			<-beats // armed
			if err := end(beatingMsg{Msg: raw, hb: hb}); err != nil {
				t.Fatal(err)
			}
			hb.mu.Lock()
			stopped := hb.stopped
			hb.mu.Unlock()
			if !stopped {
				hb.stop()
				t.Fatalf("%s left the heartbeat running", name)
			}
			raw.mu.Lock()
			defer raw.mu.Unlock()
			if last := raw.calls[len(raw.calls)-1]; last != name {
				t.Fatalf("calls %v: %q came after %s", raw.calls, last, name)
			}
		})
	}
}
