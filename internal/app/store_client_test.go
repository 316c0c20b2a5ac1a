package app_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/redistest"
)

// incrScript books like the orders service's refund script: a write whose
// second application would be a second effect. The test sends it with
// EVAL: other packages' tests flush the script cache of the shared Redis,
// and a NOSCRIPT reply the proxy drops would look like a lost booking.
var incrScript = redis.NewScript(`return redis.call('INCR', KEYS[1])`)

// The stores' client, auto-pipelined or not, never sends a command again
// after its reply was lost: the caller gets an error and the effect ran
// once. With auto-pipelining, the other invocations whose commands shared
// the lost batch get errors too, and none of their effects ran twice.
func TestStoreClientNeverResendsAfterALostReply(t *testing.T) {
	for _, auto := range []bool{true, false} {
		t.Run(fmt.Sprintf("auto_pipeline=%v", auto), func(t *testing.T) {
			plain, prefix := redistest.Client(t)
			ctx := context.Background()
			marker := prefix + "marker"
			addr := plain.Options().Addr
			proxy := redistest.NewReplyDropper(t, addr, marker)
			url := strings.Replace(redistest.URL(), addr, proxy.Addr(), 1)
			if url == redistest.URL() {
				t.Fatalf("REDIS_URL %s does not name %s", url, addr)
			}
			cfg := config.Redis{URL: url, AutoPipeline: auto}
			c, err := app.ConnectRedis(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			rdb, err := app.StoreClient(c, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, isAuto := rdb.(*redis.AutoPipeliner); isAuto != auto {
				t.Fatalf("StoreClient gave %T with auto_pipeline=%v", rdb, auto)
			}

			// Every key's booking at once, the marker's among them: they
			// share a batch when auto-pipelined.
			keys := []string{marker}
			for i := range 15 {
				keys = append(keys, fmt.Sprintf("%sk%d", prefix, i))
			}
			errs := make([]error, len(keys))
			var wg sync.WaitGroup
			for i, k := range keys {
				wg.Go(func() { errs[i] = incrScript.Eval(ctx, rdb, []string{k}).Err() })
			}
			wg.Wait()
			if !proxy.Dropped() {
				t.Fatal("the proxy never saw the marker's command")
			}
			if errs[0] == nil {
				t.Fatal("the marker's booking lost its reply but reported success")
			}
			for i, k := range keys {
				n, err := plain.Get(ctx, k).Int()
				if err != nil && err != redis.Nil {
					t.Fatal(err)
				}
				switch {
				case n > 1:
					t.Errorf("%s booked %d times (a command was sent again)", k, n)
				case errs[i] == nil && n != 1:
					t.Errorf("%s: success reported but booked %d times", k, n)
				}
			}
			if n, _ := plain.Get(ctx, marker).Int(); n != 1 {
				t.Errorf("the marker's booking ran %d times, want once (its reply was lost after it ran)", n)
			}
		})
	}
}
