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
	opts, err := redis.ParseURL(URL())
	if err != nil {
		t.Fatalf("redistest: REDIS_URL: %v", err)
	}
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
