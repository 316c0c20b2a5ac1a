package cooldown_test

import (
	"testing"

	"github.com/redis/go-redis/v9"
)

func redisClientOn(t *testing.T, url string) *redis.Client {
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	opts.MaxRetries = -1
	c := redis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	return c
}
