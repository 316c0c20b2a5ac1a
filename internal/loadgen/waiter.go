package loadgen

import (
	"encoding/json"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
)

// waiter hands completions to the goroutine waiting for an invocation.
type waiter struct {
	mu sync.Mutex
	m  map[string]chan string // invocation id → status
}

func newWaiter() *waiter { return &waiter{m: map[string]chan string{}} }

// expect registers id before it is submitted.
func (w *waiter) expect(id string) <-chan string {
	ch := make(chan string, 1)
	w.mu.Lock()
	w.m[id] = ch
	w.mu.Unlock()
	return ch
}

// forget drops id (after its completion or a timeout).
func (w *waiter) forget(id string) {
	w.mu.Lock()
	delete(w.m, id)
	w.mu.Unlock()
}

// done delivers id's status; unknown ids (a redelivered result) are ignored.
func (w *waiter) done(id, status string) {
	w.mu.Lock()
	ch := w.m[id]
	delete(w.m, id)
	w.mu.Unlock()
	if ch != nil {
		ch <- status
	}
}

// subscribeResults subscribes to every result of a topology (one wildcard
// subscription, made before anything is submitted, so no result can be
// missed) and hands each to w. It is the live half of client.Await without
// a per-request subscription and stream look-up, which would make the load
// generator, not the fleet, the bottleneck.
func subscribeResults(nc *nats.Conn, resultPrefix string, w *waiter) (*nats.Subscription, error) {
	sub, err := nc.Subscribe(resultPrefix+".>", func(m *nats.Msg) {
		id := strings.TrimPrefix(m.Subject, resultPrefix+".")
		var r struct {
			Status string `json:"status"`
		}
		if err := json.Unmarshal(m.Data, &r); err != nil {
			r.Status = "undecodable"
		}
		w.done(id, r.Status)
	})
	if err != nil {
		return nil, err
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		_ = sub.Unsubscribe()
		return nil, err
	}
	if err := nc.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return nil, err
	}
	return sub, nil
}
