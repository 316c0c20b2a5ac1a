package app

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/config"
)

// The refund's booking is never sent twice (support.RedisOrders): with a
// client that may resend a command whose reply was lost it goes as a
// command the client never resends, which costs the worker's
// auto-pipeliner a round trip of its own per refund (a command of another
// retry policy splits its batch: the load generator's framework phase
// counted one Redis read and two syscalls more per invocation, twentieth
// session). An auto-pipeliner does not tell whether its client resends:
// StoreClient records it, and one it did not make counts as resending
// (found in review, twentieth session: the first version read redis.url's
// max_retries for any auto-pipeliner, so one over a client with go-redis's
// default of 3 retries, or over a cluster client, said "never resends").
func TestRedisMayResendFollowsTheClientUnderThePipeliner(t *testing.T) {
	client := func(retries int) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: retries})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	storeClient := func(c *redis.Client) redis.UniversalClient {
		rdb, err := StoreClient(c, config.Redis{AutoPipeline: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rdb.Close() })
		return rdb
	}
	bare := func(c interface {
		AutoPipeline() (*redis.AutoPipeliner, error)
	}) redis.UniversalClient {
		ap, err := c.AutoPipeline()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ap.Close() })
		return ap
	}
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	t.Cleanup(func() { _ = cluster.Close() })
	for _, tc := range []struct {
		name string
		rdb  redis.UniversalClient
		want bool
	}{
		{"plain client without retries (ConnectRedis' default)", client(-1), false},
		{"plain client with retries", client(3), true},
		{"plain client with go-redis' default (0 = 3 retries)", client(0), true},
		{"StoreClient's pipeliner over a client without retries", storeClient(client(-1)), false},
		{"StoreClient's pipeliner over a client with retries", storeClient(client(2)), true},
		{"a pipeliner StoreClient did not make (go-redis' default client)", bare(client(0)), true},
		{"a pipeliner over a cluster client", bare(cluster), true},
	} {
		if got := redisMayResend(tc.rdb); got != tc.want {
			t.Errorf("%s: redisMayResend = %v, want %v", tc.name, got, tc.want)
		}
	}
}
