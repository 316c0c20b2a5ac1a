package support_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/redistest"
)

func closedClient(t *testing.T) *redis.Client {
	opts, err := redis.ParseURL(redistest.ClosedURL())
	if err != nil {
		t.Fatal(err)
	}
	opts.MaxRetries = -1
	c := redis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	return c
}
