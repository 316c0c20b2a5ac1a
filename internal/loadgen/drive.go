package loadgen

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// load is one phase's closed-loop load: window goroutines each submit an
// invocation and wait for its result before the next.
type load struct {
	n        int
	window   int
	timeout  time.Duration
	idPrefix string
	// submit sends invocation i (id, order) and returns when it is stored.
	submit func(ctx context.Context, i int, id, order string) error
	wait   *waiter
	// orders, when set, gives each in-flight invocation its own order.
	orders *orderPool
	// midway, when set, is called once when half of the invocations
	// finished (under full load).
	midway func()
}

// run drives the load and fills p's counts and timings.
func (l load) run(ctx context.Context, p *Phase) error {
	var (
		next, inFlight, maxInFlight atomic.Int64
		mu                          sync.Mutex
		samples                     = make([]sample, 0, l.n)
		firstErr                    error
	)
	p.Other = map[string]int{}
	p.completedIDs = map[string]bool{}
	start := time.Now()
	var last atomic.Int64
	var finished atomic.Int64
	var midway sync.Once
	var wg sync.WaitGroup
	for range min(l.window, l.n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= l.n {
					return
				}
				oi := i
				if l.orders != nil {
					var err error
					if oi, err = l.orders.take(ctx); err != nil {
						mu.Lock()
						firstErr = cmpErr(firstErr, err)
						p.Lost++
						mu.Unlock()
						continue
					}
				}
				id := fmt.Sprintf("%s-%d", l.idPrefix, i)
				ch := l.wait.expect(id)
				t0 := time.Now()
				cur := inFlight.Add(1)
				for {
					m := maxInFlight.Load()
					if cur <= m || maxInFlight.CompareAndSwap(m, cur) {
						break
					}
				}
				status, err := l.one(ctx, i, id, orderID(oi), ch)
				inFlight.Add(-1)
				done := time.Now()
				if l.midway != nil && int(finished.Add(1)) == l.n/2 {
					midway.Do(l.midway)
				}
				if l.orders != nil {
					l.orders.put(oi)
				}
				mu.Lock()
				p.Submitted++
				switch {
				case err != nil:
					p.Lost++
					firstErr = cmpErr(firstErr, err)
				case status == "completed" || status == "acked":
					p.Completed++
					p.completedIDs[id] = true
					samples = append(samples, sample{latency: done.Sub(t0), at: done.Sub(start)})
					for {
						l := last.Load()
						if int64(done.Sub(start)) <= l || last.CompareAndSwap(l, int64(done.Sub(start))) {
							break
						}
					}
				default:
					p.Other[status]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	p.MaxInFlight = int(maxInFlight.Load())
	p.summarise(samples, time.Duration(last.Load()))
	if p.Lost > 0 && firstErr != nil {
		return fmt.Errorf("loadgen: %s: %d invocations got no result (first error: %w)", p.Name, p.Lost, firstErr)
	}
	return nil
}

// one submits invocation i and waits for its status.
func (l load) one(ctx context.Context, i int, id, order string, ch <-chan string) (string, error) {
	defer l.wait.forget(id)
	tctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	if err := l.submit(tctx, i, id, order); err != nil {
		return "", fmt.Errorf("submit %s: %w", id, err)
	}
	select {
	case s := <-ch:
		return s, nil
	case <-tctx.Done():
		return "", fmt.Errorf("await %s: %w", id, tctx.Err())
	}
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}
