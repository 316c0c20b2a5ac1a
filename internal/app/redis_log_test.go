package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/internal/app"
)

// syncBuffer is a bytes.Buffer safe for go-redis's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Regression (found in review, twenty-fifth session): go-redis wrote its
// own messages (a pool that cannot dial Redis) as plain-text lines on
// stderr, breaking the worker's JSON log stream. They now go to the
// worker's logger: JSON lines, source "go-redis", level warn.
func TestRedisOwnMessagesAreJSONLogLines(t *testing.T) {
	var buf syncBuffer
	app.RouteRedisLogs(zerolog.New(&buf))
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 2})
	defer c.Close()
	for range 3 {
		_ = c.Ping(context.Background()).Err()
	}
	out := strings.TrimSpace(buf.String())
	if out == "" {
		t.Fatal("nothing reached the logger: go-redis still writes its messages elsewhere (a refused dial logs)")
	}
	for _, line := range strings.Split(out, "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON log line: %q", line)
		}
		if m["source"] != "go-redis" || m["level"] != "warn" {
			t.Fatalf("log line %q; want source go-redis at level warn", line)
		}
	}
}
