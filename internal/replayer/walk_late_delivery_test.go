package replayer

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// lateJS hands out walk consumers whose last delivery arrives just after
// the walk's wait ran out: the server sent it (the consumer counts it
// delivered) but it reaches the client late, as from a server or link
// that is slow, the very case walkSilence means to wait for ("a slow
// server: it still holds entries for this walk").
type lateJS struct {
	jetstream.JetStream
	lateAt int // the delivery (1-based) that arrives late
}

func (j *lateJS) CreateConsumer(ctx context.Context, stream string, cfg jetstream.ConsumerConfig) (jetstream.Consumer, error) {
	c, err := j.JetStream.CreateConsumer(ctx, stream, cfg)
	if err != nil {
		return nil, err
	}
	return &lateConsumer{Consumer: c, lateAt: j.lateAt}, nil
}

type lateConsumer struct {
	jetstream.Consumer
	lateAt int
}

func (c *lateConsumer) Messages(opts ...jetstream.PullMessagesOpt) (jetstream.MessagesContext, error) {
	m, err := c.Consumer.Messages(opts...)
	if err != nil {
		return nil, err
	}
	return &lateMessages{MessagesContext: m, lateAt: c.lateAt}, nil
}

type lateMessages struct {
	jetstream.MessagesContext
	lateAt int
	mu     sync.Mutex
	n      int
	held   jetstream.Msg
}

func (m *lateMessages) Next(opts ...jetstream.NextOpt) (jetstream.Msg, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held != nil {
		h := m.held
		m.held = nil
		return h, nil
	}
	msg, err := m.MessagesContext.Next(opts...)
	if err != nil {
		return msg, err
	}
	m.n++
	if m.n == m.lateAt {
		// Delivered by the server, but not here within the wait.
		m.held = msg
		return nil, nats.ErrTimeout
	}
	return msg, nil
}

// Regression (found in review, eighteenth session): Review (diffa): the walk's new silence check takes a delivery the server
// counts but the client has not received yet for one lost on the way, and
// fails the walk (ErrWalkInterrupted: "deliveries ... never arrived; run
// again") at the first wait it sees, instead of waiting again as it does
// for a slow server that has not sent them yet. A delivery that arrives a
// moment after the wait (the server answers the consumer-info request
// after the deliveries it was busy with, on the same connection) is
// exactly what a slow server produces, so the on-call engineer's replay
// keeps failing with "run again" on a server that serves every entry.
// (A delivery really lost leaves a gap that the next one shows, or
// silence that walkPatience bounds.)
func TestWalkWaitsForADeliveryThatArrivesLate(t *testing.T) {
	x := newFx(t, false)
	const n = 5
	x.seedFastT(t, "late", n)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := x.walkFleet(ctx)
	f.JS = &lateJS{JetStream: f.JS, lateAt: n}
	got := 0
	for it, err := range f.walk(ctx, dlq.Filter{}, 0) {
		if it == nil {
			t.Fatalf("the walk failed after %d of %d entries, every one of which the server delivered: %v", got, n, err)
		}
		got++
	}
	if got != n {
		t.Fatalf("the walk yielded %d entries, want %d", got, n)
	}
}
