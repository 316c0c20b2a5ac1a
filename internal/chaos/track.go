package chaos

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// supportAgent is the agent cmd/worker ships (internal/app.SupportAgentName;
// not imported, to keep the provider SDKs out of this package).
const supportAgent = "support"

// tracker knows which requests were submitted and which results were seen.
type tracker struct {
	mu        sync.Mutex
	ids       []string
	index     map[string]int
	submitted map[string]bool
	// seen: a result is known (live or from a look-up).
	seen map[string]bool
	// history: statuses observed live on agent.results.> in order (a
	// lower bound: a live subscription misses what is published while the
	// harness is disconnected).
	history map[string][]envelope.Status
	live    int
}

func newTracker(ids []string) *tracker {
	t := &tracker{ids: ids, index: map[string]int{}, submitted: map[string]bool{},
		seen: map[string]bool{}, history: map[string][]envelope.Status{}}
	for i, id := range ids {
		t.index[id] = i
	}
	return t
}

// observe records a live result.
func (t *tracker) observe(res *envelope.Result) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.index[res.InvocationID]; !ok {
		return
	}
	t.seen[res.InvocationID] = true
	t.history[res.InvocationID] = append(t.history[res.InvocationID], res.Status)
	t.live++
}

func (t *tracker) markSubmitted(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.submitted[id] = true
}

func (t *tracker) markSeen(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seen[id] = true
}

// pending returns the submitted ids without a known result.
func (t *tracker) pending() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, id := range t.ids {
		if t.submitted[id] && !t.seen[id] {
			out = append(out, id)
		}
	}
	return out
}

func (t *tracker) counts() (submitted, seen int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.submitted), len(t.seen)
}

// contradiction reports whether id's live history shows a completed
// result followed by a different status, and describes it.
func (t *tracker) contradiction(id string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	done := false
	for _, s := range t.history[id] {
		if done && s != envelope.StatusCompleted {
			return id + " (" + joinStatuses(t.history[id]) + ")", true
		}
		done = done || s == envelope.StatusCompleted
	}
	return "", false
}

// completedLive reports whether the live subscription saw id complete.
func (t *tracker) completedLive(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.history[id] {
		if s == envelope.StatusCompleted {
			return true
		}
	}
	return false
}

// historyString is id's live history, "completed→dead_lettered".
func (t *tracker) historyString(id string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return joinStatuses(t.history[id])
}

func joinStatuses(ss []envelope.Status) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = string(s)
	}
	return strings.Join(parts, "→")
}

// subscribeResults follows agent.results.> live.
func (h *Harness) subscribeResults(t *tracker) (*nats.Subscription, error) {
	sub, err := h.nc.Subscribe(envelope.DefaultResultPrefix+".>", func(m *nats.Msg) {
		res, err := envelope.DecodeResult(m.Data)
		if err != nil {
			return // the checker reads every result from the stream and reports bad ones
		}
		t.observe(res)
	})
	if err != nil {
		return nil, fmt.Errorf("chaos: subscribe results: %w", err)
	}
	sub.SetPendingLimits(-1, -1)
	return sub, nil
}

// requestOrder is the demo order the i-th request asks to refund: one of
// A-1001 … A-1100. The checker holds every refund record of the request to
// it.
func requestOrder(i int) string {
	return fmt.Sprintf("A-%d", 1001+i%100)
}

// newRequest is the i-th support request: refund the order
// requestOrder(i), in its own session.
func newRequest(id string, i int) *envelope.Request {
	order := requestOrder(i)
	return &envelope.Request{
		V: envelope.Version, InvocationID: id, Agent: supportAgent,
		UserID: fmt.Sprintf("chaos-user-%d", i), SessionID: "session-" + id,
		Message: model.NewTextContent(model.RoleUser, "Please refund order "+order+", it arrived damaged."),
	}
}

// submitAll publishes every request at rate per second with a pool of
// senders. A failed publish (NATS restarting) is retried with the same
// invocation id: the server's de-duplication drops a second copy. It
// returns when all are submitted or deadline passes.
func (h *Harness) submitAll(ctx context.Context, cl *client.Client, t *tracker, rate float64, deadline time.Time) {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	work := make(chan int)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				id := t.ids[i]
				for ctx.Err() == nil {
					sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
					_, err := cl.Send(sctx, newRequest(id, i))
					scancel()
					if err == nil {
						t.markSubmitted(id)
						break
					}
					var ie *envelope.InvalidError
					if errors.As(err, &ie) {
						h.logf("request %s invalid: %v", id, err)
						break
					}
					select {
					case <-ctx.Done():
					case <-time.After(250 * time.Millisecond):
					}
				}
			}
		}()
	}
	start := time.Now()
	for i := range t.ids {
		at := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		if d := time.Until(at); d > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
		}
		select {
		case <-ctx.Done():
		case work <- i:
			continue
		}
		break
	}
	close(work)
	wg.Wait()
}

// sweep looks up the stored result of every pending id (the live
// subscription misses results published while NATS restarts).
func (h *Harness) sweep(ctx context.Context, cl *client.Client, t *tracker) {
	ids := t.pending()
	work := make(chan string)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				lctx, cancel := context.WithTimeout(ctx, 3*time.Second)
				_, err := cl.Lookup(lctx, id)
				cancel()
				if err == nil {
					t.markSeen(id)
				}
			}
		}()
	}
	for _, id := range ids {
		if ctx.Err() != nil {
			break
		}
		work <- id
	}
	close(work)
	wg.Wait()
}
