package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/natstest"
)

// Regression (found in review, nineteenth session): The README's contract for a full Redis (maxmemory-policy noeviction,
// which it requires): "Redis must refuse writes, which the worker turns
// into a delayed retry". Connect now runs RedisStoresID at every start,
// which sends SET NX for <prefix>stores:id even when the id is already
// there; SETNX is a write Redis refuses at maxmemory ("OOM command not
// allowed"), so a worker that (re)starts while Redis is full (a rolling
// deploy, a crash, a scale-up during the incident) exits 1 instead of
// starting and retrying, and a supervisor's crash-loop backoff then delays
// it well past the moment Redis has room again. Reading the fleet's
// existing id needs no write. Correct: read the id first and write one only
// when there is none, so that the worker starts on a full Redis whose id
// exists, as it did before the id was introduced.
func TestWorkerStartsOnFullRedisWithExistingID(t *testing.T) {
	url := startSecondRedis(t)
	s := natstest.RunServer(t)
	prefix := "review-full:"
	if err := startOnRedis(t, "w-before-full", s.ClientURL(), url, prefix); err != nil {
		t.Fatal(err)
	}
	opts, _ := redis.ParseURL(url)
	c := redis.NewClient(opts)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	if err := startOnRedis(t, "w-while-full", s.ClientURL(), url, prefix); err != nil {
		t.Errorf("a worker (re)started while Redis is full (noeviction) and its stores id exists: %v; want it to start (the id is read, not written)", err)
	}
}
