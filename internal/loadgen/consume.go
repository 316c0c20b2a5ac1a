package loadgen

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// consume is the baselines' fetch loop, shaped like internal/worker's: wait
// for a free slot, fetch as many messages as there are free slots, handle
// each on its own goroutine. It returns when ctx ends and every handler
// returned.
func consume(ctx context.Context, cons jetstream.Consumer, concurrency int, handle func(jetstream.Msg)) {
	slots := make(chan struct{}, concurrency)
	for range concurrency {
		slots <- struct{}{}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
			return
		case <-slots:
		}
		n := 1
	take:
		for n < concurrency {
			select {
			case <-slots:
				n++
			default:
				break take
			}
		}
		fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		batch, err := cons.Fetch(n, jetstream.FetchContext(fctx))
		if err != nil {
			cancel()
			for range n {
				slots <- struct{}{}
			}
			if ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
				time.Sleep(100 * time.Millisecond)
			}
			continue
		}
		got := 0
		for msg := range batch.Messages() {
			got++
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { slots <- struct{}{} }()
				handle(msg)
			}()
		}
		cancel()
		for range n - got {
			slots <- struct{}{}
		}
	}
}
