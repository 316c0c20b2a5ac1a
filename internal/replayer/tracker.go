package replayer

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// tracker watches the results of replays (one subscription to
// <result prefix>.*) and applies the auto-halt rule: once minResults results
// came back, it halts when the share of dead_lettered and failed ones
// reaches ratio.
type tracker struct {
	sub        *nats.Subscription
	cl         *client.Client
	ratio      float64
	minResults int
	onResult   func(id, class string, st envelope.Status)

	mu       sync.Mutex
	pending  map[string]*watch
	results  int
	failed   int
	halted   bool
	haltText string
}

type watch struct {
	class string
	done  chan struct{}
	res   *envelope.Result
	// refs counts the replays of the invocation registered and not
	// forgotten (two entries of one invocation in a plan share a watch).
	refs int
}

func newTracker(nc *nats.Conn, cl *client.Client, resultPrefix string, ratio float64, minResults int,
	onResult func(id, class string, st envelope.Status)) (*tracker, error) {
	t := &tracker{cl: cl, ratio: ratio, minResults: minResults, onResult: onResult, pending: map[string]*watch{}}
	sub, err := nc.Subscribe(resultPrefix+".*", t.handle)
	if err != nil {
		return nil, fmt.Errorf("subscribe to results: %w", err)
	}
	sub.SetPendingLimits(-1, -1)
	if err := nc.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("subscribe to results: %w", err)
	}
	t.sub = sub
	return t, nil
}

func (t *tracker) close() { _ = t.sub.Unsubscribe() }

// expect registers a replay before it is published, so its result cannot
// be missed. A replay of an invocation already awaited shares its watch.
func (t *tracker) expect(id, class string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if w, ok := t.pending[id]; ok && w.res == nil {
		w.refs++
		return
	}
	t.pending[id] = &watch{class: class, done: make(chan struct{}), refs: 1}
}

// forget drops a registration (the publish failed or was a duplicate); the
// watch goes when no other replay of the invocation holds it.
func (t *tracker) forget(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if w, ok := t.pending[id]; ok && w.res == nil {
		if w.refs--; w.refs <= 0 {
			delete(t.pending, id)
		}
	}
}

func (t *tracker) handle(m *nats.Msg) {
	res, err := envelope.DecodeResult(m.Data)
	if err != nil {
		return
	}
	t.record(res)
}

func (t *tracker) record(res *envelope.Result) {
	t.mu.Lock()
	w, ok := t.pending[res.InvocationID]
	if !ok || w.res != nil {
		t.mu.Unlock()
		return
	}
	w.res = res
	close(w.done)
	t.results++
	if res.Status != envelope.StatusCompleted {
		t.failed++
	}
	if !t.halted && t.results >= t.minResults && float64(t.failed) >= t.ratio*float64(t.results) {
		t.halted = true
		t.haltText = fmt.Sprintf("%d of the %d replay results that came back were dead-lettered or failed again (replay.halt_ratio %.2f after %d results): the cause is not fixed",
			t.failed, t.results, t.ratio, t.minResults)
	}
	class := w.class
	t.mu.Unlock()
	if t.onResult != nil {
		t.onResult(res.InvocationID, class, res.Status)
	}
}

// halt returns a *HaltError once the auto-halt rule fired.
func (t *tracker) halt() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.halted {
		return &HaltError{Rule: RuleAutoHalt, Reason: t.haltText}
	}
	return nil
}

// await waits up to timeout for the result of id. When none arrives it
// looks at the stored result: an invocation that had completed before (a
// replay the worker recognised as done publishes nothing new) counts as
// completed. It returns nil when there is no result.
func (t *tracker) await(ctx context.Context, id string, timeout time.Duration) *envelope.Result {
	t.mu.Lock()
	w, ok := t.pending[id]
	t.mu.Unlock()
	if !ok {
		return nil
	}
	tm := time.NewTimer(timeout)
	defer tm.Stop()
	select {
	case <-w.done:
		return w.res
	case <-ctx.Done():
		return nil
	case <-tm.C:
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if st, err := t.cl.Lookup(lctx, id); err == nil && st.Status == envelope.StatusCompleted {
		t.record(st.Result)
		return st.Result
	}
	return nil
}

// hasResult reports whether id's result arrived.
func (t *tracker) hasResult(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	w, ok := t.pending[id]
	return ok && w.res != nil
}

// waiting returns the registered invocation ids without a result yet.
func (t *tracker) waiting() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for id, w := range t.pending {
		if w.res == nil {
			out = append(out, id)
		}
	}
	return out
}
