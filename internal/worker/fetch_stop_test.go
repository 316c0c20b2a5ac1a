package worker

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// oneMsgBatch delivers its messages, then ends.
type oneMsgBatch struct{ ch chan jetstream.Msg }

func (b oneMsgBatch) Messages() <-chan jetstream.Msg { return b.ch }
func (b oneMsgBatch) Error() error                   { return nil }

// batchConsumer answers every fetch with batch.
type batchConsumer struct {
	jetstream.Consumer
	batch jetstream.MessageBatch
}

func (c batchConsumer) Fetch(int, ...jetstream.FetchOpt) (jetstream.MessageBatch, error) {
	return c.batch, nil
}

// A message a pull brings once the worker is stopping is Nak'ed for
// another worker at once, not started and not dropped (noticed in review,
// sixteenth session: the pull used to end with the stop, and the library
// dropped what the server had already sent, which then waited out
// AckWait).
func TestFetchWhileStoppingNaksWhatArrives(t *testing.T) {
	msg := &callLog{}
	ch := make(chan jetstream.Msg, 1)
	ch <- msg
	close(ch)
	w := &Worker{cons: batchConsumer{batch: oneMsgBatch{ch: ch}}, cfg: Config{FetchWait: 2 * time.Second}}
	stop, cancel := context.WithCancel(context.Background())
	cancel()
	work := make(chan jetstream.Msg, 1)
	got, err := w.fetch(context.Background(), stop, 1, work)
	if err != nil || got != 0 {
		t.Fatalf("fetch = %d, %v; want 0 handed over", got, err)
	}
	if len(work) != 0 {
		t.Fatal("a message was handed to a handler while stopping")
	}
	if len(msg.calls) != 1 || msg.calls[0] != "nak_with_delay" {
		t.Fatalf("message calls %v, want [nak_with_delay]", msg.calls)
	}
}
