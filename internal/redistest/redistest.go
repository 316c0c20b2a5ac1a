// Package redistest gives each test a real Redis client and a key prefix of
// its own, so parallel tests never collide. The server comes from REDIS_URL
// (default redis://127.0.0.1:6379/0). A test whose Redis is not reachable
// fails: Redis is a required service of this project's test suite (.ci/run
// starts it).
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultURL is used when REDIS_URL is not set.
const DefaultURL = "redis://127.0.0.1:6379/0"

// URL returns REDIS_URL or DefaultURL.
func URL() string {
	if u := os.Getenv("REDIS_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// Client returns a client on URL() and a prefix unique to this test
// ("test:<name>:<random>:"). Keys under the prefix are deleted when the test
// ends (with SCAN on the prefix: test clean-up only, never product code).
func Client(t testing.TB) (*redis.Client, string) {
	t.Helper()
	return client(t, func(*redis.Options) {})
}

func client(t testing.TB, set func(*redis.Options)) (*redis.Client, string) {
	t.Helper()
	opts, err := redis.ParseURL(URL())
	if err != nil {
		t.Fatalf("redistest: REDIS_URL: %v", err)
	}
	set(opts)
	c := redis.NewClient(opts)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		t.Fatalf("redistest: Redis at %s is not reachable (start it as .ci/run does): %v", URL(), err)
	}
	prefix := Prefix(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		iter := c.Scan(ctx, 0, prefix+"*", 500).Iterator()
		var keys []string
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if len(keys) > 0 {
			c.Del(ctx, keys...)
		}
		c.Close()
	})
	return c, prefix
}

// AutoPipelined returns what the worker's stores get by default
// (redis.auto_pipeline): go-redis's auto-pipeliner over a client on URL()
// that never retries a command (as app.ConnectRedis's), and a prefix as
// Client's, whose keys are deleted when the test ends.
func AutoPipelined(t testing.TB) (*redis.AutoPipeliner, string) {
	t.Helper()
	c, prefix := client(t, func(o *redis.Options) { o.MaxRetries = -1 })
	ap, err := c.AutoPipeline()
	if err != nil {
		t.Fatalf("redistest: auto-pipeline: %v", err)
	}
	return ap, prefix // closed with c by Client's clean-up
}

// Kind is one way of talking to Redis that the stores must all support.
type Kind struct {
	Name string // Name names the kind in subtest names.
	// New returns a client of this kind and a prefix of the test's own.
	New func(t testing.TB) (redis.UniversalClient, string)
}

// Kinds are the clients every Redis store's conformance suite runs on: a
// plain client and the worker's default auto-pipeliner.
func Kinds() []Kind {
	return []Kind{
		{Name: "plain", New: func(t testing.TB) (redis.UniversalClient, string) { return Client(t) }},
		{Name: "autopipeline", New: func(t testing.TB) (redis.UniversalClient, string) { return AutoPipelined(t) }},
	}
}

// Prefix returns a key prefix unique to this test run.
func Prefix(t testing.TB) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := strings.NewReplacer("/", ".", " ", "_", ":", "_").Replace(t.Name())
	return "test:" + name + ":" + hex.EncodeToString(b[:]) + ":"
}

// ClosedURL returns a Redis URL on a loopback port nothing listens on, for
// "store unreachable" tests.
func ClosedURL() string { return "redis://127.0.0.1:1/0" }
