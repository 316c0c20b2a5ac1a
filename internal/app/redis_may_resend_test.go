package app

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/redistest"
)

// The refund's booking is never sent twice (support.RedisOrders): with a
// client that may resend a command whose reply was lost it goes as a
// command the client never resends, which costs the worker's
// auto-pipeliner a round trip of its own per refund (a command of another
// retry policy splits its batch: the load generator's framework phase
// counted one Redis read and two syscalls more per invocation, twentieth
// session). The worker's auto-pipeliner runs over the client ConnectRedis
// made, which resends only with a positive max_retries in the URL: the
// booking rides the pipeline otherwise.
func TestRedisMayResendFollowsTheURLsMaxRetries(t *testing.T) {
	url := redistest.URL()
	plain := func(retries int) redis.UniversalClient {
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: retries})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	ap := func() redis.UniversalClient {
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
		t.Cleanup(func() { _ = c.Close() })
		p, err := c.AutoPipeline()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		return p
	}
	for _, tc := range []struct {
		name string
		url  string
		rdb  redis.UniversalClient
		want bool
	}{
		{"plain client without retries", url, plain(-1), false},
		{"plain client with retries", url, plain(3), true},
		{"auto-pipeliner, URL without max_retries", "redis://127.0.0.1:6379/0", ap(), false},
		{"auto-pipeliner, URL with max_retries=2", "redis://127.0.0.1:6379/0?max_retries=2", ap(), true},
		{"auto-pipeliner, URL that does not parse", "::", ap(), true},
	} {
		if got := redisMayResend(config.Redis{URL: tc.url}, tc.rdb); got != tc.want {
			t.Errorf("%s: redisMayResend = %v, want %v", tc.name, got, tc.want)
		}
	}
}
