// Package clienttest has a stand-in worker for producer-side tests: it pulls
// requests from the "workers" consumer, answers each with a result computed
// by a handler and acks, like the real worker does for a final response. It
// is a test double for the worker only; the NATS server is real.
package clienttest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Handler computes the result of a request.
type Handler func(*envelope.Request) *envelope.Result

// Echo completes every request with its text; a text containing "[fail]"
// fails with class AUTH and one containing "[dlq]" is dead-lettered with
// class SERVER.
func Echo(req *envelope.Request) *envelope.Result {
	text := req.Message.Text()
	switch {
	case strings.Contains(text, "[fail]"):
		return &envelope.Result{Status: envelope.StatusFailed, ErrorClass: "AUTH", UserMessage: "not completed"}
	case strings.Contains(text, "[dlq]"):
		return &envelope.Result{Status: envelope.StatusDeadLettered, ErrorClass: "SERVER", UserMessage: "queued"}
	}
	return &envelope.Result{Status: envelope.StatusCompleted, Content: "echo: " + text, ModelCalls: 1}
}

// Worker is a running stand-in worker.
type Worker struct {
	js      jetstream.JetStream
	cfg     streams.Config
	handle  Handler
	release chan struct{}

	mu   sync.Mutex
	runs map[string]int
	seen chan string
}

// Option changes a Worker.
type Option func(*Worker)

// Held makes the worker take each request and hold it until Release is
// called, so a test can await before completion.
func Held() Option { return func(w *Worker) { w.release = make(chan struct{}) } }

// Start runs a worker on cfg's workers consumer until t ends.
func Start(t testing.TB, js jetstream.JetStream, cfg streams.Config, h Handler, opts ...Option) *Worker {
	t.Helper()
	cfg = cfg.WithDefaults()
	w := &Worker{js: js, cfg: cfg, handle: h, runs: map[string]int{}, seen: make(chan string, 1024)}
	for _, o := range opts {
		o(w)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cons, err := js.Consumer(ctx, cfg.RequestsStream, cfg.WorkerConsumer)
	if err != nil {
		cancel()
		t.Fatalf("clienttest: consumer: %v", err)
	}
	it, err := cons.Messages()
	if err != nil {
		cancel()
		t.Fatalf("clienttest: messages: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			m, err := it.Next()
			if err != nil {
				if !errors.Is(err, jetstream.ErrMsgIteratorClosed) && ctx.Err() == nil {
					t.Errorf("clienttest: next: %v", err)
				}
				return
			}
			w.process(ctx, t, m)
		}
	}()
	t.Cleanup(func() {
		cancel()
		it.Stop()
		<-done
	})
	return w
}

func (w *Worker) process(ctx context.Context, t testing.TB, m jetstream.Msg) {
	req, err := envelope.DecodeRequest(m.Data(), 0)
	if err != nil {
		t.Errorf("clienttest: bad request: %v", err)
		_ = m.Term()
		return
	}
	w.mu.Lock()
	w.runs[req.InvocationID]++
	w.mu.Unlock()
	select {
	case w.seen <- req.InvocationID:
	case <-ctx.Done():
		_ = m.Nak()
		return
	}
	if w.release != nil {
		select {
		case <-w.release:
		case <-ctx.Done():
			_ = m.Nak()
			return
		}
	}
	res := w.handle(req)
	res.InvocationID = req.InvocationID
	res.Attempts = 1
	data, err := res.Encode()
	if err != nil {
		t.Errorf("clienttest: encode: %v", err)
		return
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := w.js.Publish(pctx, w.cfg.ResultSubject(req.InvocationID), data); err != nil {
		if ctx.Err() == nil {
			t.Errorf("clienttest: publish result: %v", err)
		}
		return
	}
	if err := m.DoubleAck(pctx); err != nil && ctx.Err() == nil {
		t.Errorf("clienttest: ack: %v", err)
	}
}

// Release lets a Held worker finish the requests it holds and every later
// one.
func (w *Worker) Release() { close(w.release) }

// Taken returns a channel that receives each invocation id when the worker
// takes the request. It buffers 1024 ids; past that the worker waits for the
// test to read.
func (w *Worker) Taken() <-chan string { return w.seen }

// Runs returns how often the worker ran each invocation id.
func (w *Worker) Runs() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int, len(w.runs))
	for k, v := range w.runs {
		out[k] = v
	}
	return out
}
