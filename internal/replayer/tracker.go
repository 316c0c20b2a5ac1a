package replayer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// tracker watches the results of replays (one subscription to
// <result prefix>.*) and applies the auto-halt rule: once minResults results
// came back, it halts when the share of dead_lettered and failed ones
// reaches ratio.
//
// A result counts for a replay only if it belongs to that replay's
// generation or a later one: its Nats-Msg-Id (res-<id>-<n>-<status>, see
// worker.ResultMsgID) carries the replay count n of the request it answers.
// An older generation's result (the dead_lettered result of the run that
// made the entry, published late; a completed result of an earlier
// replay) says nothing about this replay (found in review, eighteenth
// session).
type tracker struct {
	sub        *nats.Subscription
	js         jetstream.JetStream
	stream     string // the results stream
	prefix     string // the result subject prefix
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
	// gens counts the replays of the invocation registered and not
	// forgotten, by replay count (two entries of one invocation in a plan
	// share a watch).
	gens map[int]int
	// canary is set when a canary replay registered the watch: only a
	// result of its own generation proves the cause is fixed.
	canary bool
}

// want is the replay count a result must carry to count: the newest
// registered replay's (an older replay of the invocation that the newer
// entry followed is acked by the worker without a new result).
func (w *watch) want() int {
	n := -1
	for g := range w.gens {
		n = max(n, g)
	}
	return n
}

// refs is the number of registered replays.
func (w *watch) refs() int {
	n := 0
	for _, c := range w.gens {
		n += c
	}
	return n
}

// resultReplay reads the replay count from a result's Nats-Msg-Id
// (res-<id>-<n>-<status>). ok is false when the id is absent or not of
// that form (a result published without one: a request dead-lettered as
// received).
func resultReplay(msgID, invocationID string) (n int, ok bool) {
	rest, found := strings.CutPrefix(msgID, "res-"+invocationID+"-")
	if !found {
		return 0, false
	}
	num, _, found := strings.Cut(rest, "-")
	if !found {
		return 0, false
	}
	n, err := strconv.Atoi(num)
	if err != nil {
		return 0, false
	}
	return n, true
}

// newTracker subscribes to the results; js and resultsStream serve the
// look-up of a result the subscription missed.
func newTracker(nc *nats.Conn, js jetstream.JetStream, resultsStream, resultPrefix string, ratio float64, minResults int,
	onResult func(id, class string, st envelope.Status)) (*tracker, error) {
	t := &tracker{js: js, stream: resultsStream, prefix: resultPrefix, ratio: ratio, minResults: minResults,
		onResult: onResult, pending: map[string]*watch{}}
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

// expect registers a replay (replay count n) before it is published, so
// its result cannot be missed. A replay of an invocation already awaited
// shares its watch.
func (t *tracker) expect(id, class string, n int, canary bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if w, ok := t.pending[id]; ok && w.res == nil {
		w.gens[n]++
		w.canary = w.canary || canary
		return
	}
	t.pending[id] = &watch{class: class, done: make(chan struct{}), gens: map[int]int{n: 1}, canary: canary}
}

// forget drops a registration (the publish failed or was a duplicate); the
// watch goes when no other replay of the invocation holds it.
func (t *tracker) forget(id string, n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if w, ok := t.pending[id]; ok && w.res == nil {
		if w.gens[n]--; w.gens[n] <= 0 {
			delete(w.gens, n)
		}
		if w.refs() <= 0 {
			delete(t.pending, id)
		}
	}
}

func (t *tracker) handle(m *nats.Msg) {
	res, err := envelope.DecodeResult(m.Data)
	if err != nil {
		return
	}
	n, known := resultReplay(m.Header.Get(envelope.HeaderMsgID), res.InvocationID)
	t.record(res, n, known)
}

// record takes res as the result of its invocation's awaited replay unless
// its replay count n (known: read from its Nats-Msg-Id) is older than the
// replay's. A result without one is taken as before: the worker publishes
// without an id only a request's dead letter as received (a replay of the
// same bytes meets the same fate) and, rarely, a recorded result again
// after the results stream lost it.
func (t *tracker) record(res *envelope.Result, n int, known bool) {
	t.mu.Lock()
	w, ok := t.pending[res.InvocationID]
	if !ok || w.res != nil || (known && n < w.want()) {
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
// looks at the stored result, in case the subscription missed it. For a
// canary replay only a completed result of its generation or a later one
// counts (found in review, eighteenth session): an older one predates the
// replay (an invocation that had completed before; the canary no longer
// publishes those, see exec.completedBefore), so the replay was acked
// without running and proves nothing. For any other replay a stored
// completed result of any generation counts: the invocation is completed,
// which is what the summary reports (counting it NO RESULT sent on-call
// after finished work). It returns nil when there is no result.
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
	// For a canary, a stored result without a replay count in its id
	// cannot be told from an earlier generation's: it does not count, and
	// record itself refuses an older generation's.
	t.mu.Lock()
	canary := w.canary
	t.mu.Unlock()
	if res, n, known, err := t.lookup(lctx, id); err == nil && res.Status == envelope.StatusCompleted {
		switch {
		case canary && known:
			t.record(res, n, known)
		case !canary:
			t.record(res, 0, false) // any generation: the invocation completed
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return w.res // also a live result that came in meanwhile
}

// lookup reads id's stored result and the replay count of its Nats-Msg-Id.
func (t *tracker) lookup(ctx context.Context, id string) (res *envelope.Result, n int, known bool, err error) {
	if t.js == nil {
		return nil, 0, false, errors.New("no results stream")
	}
	s, err := t.js.Stream(ctx, t.stream)
	if err != nil {
		return nil, 0, false, fmt.Errorf("results stream %s: %w", t.stream, err)
	}
	raw, err := s.GetLastMsgForSubject(ctx, envelope.ResultSubject(t.prefix, id))
	if err != nil {
		return nil, 0, false, fmt.Errorf("result of %s: %w", id, err)
	}
	if res, err = envelope.DecodeResult(raw.Data); err != nil {
		return nil, 0, false, fmt.Errorf("result of %s: %w", id, err)
	}
	if res.InvocationID != id {
		return nil, 0, false, fmt.Errorf("result of %s: names invocation %q", id, res.InvocationID)
	}
	n, known = resultReplay(raw.Header.Get(envelope.HeaderMsgID), id)
	return res, n, known, nil
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
