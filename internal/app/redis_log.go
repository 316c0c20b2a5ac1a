package app

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
)

// redisLog is the logger go-redis's own messages go to (RouteRedisLogs).
var (
	redisLog     atomic.Pointer[zerolog.Logger]
	redisLogOnce sync.Once
)

// RouteRedisLogs makes go-redis write its own messages (a pool that cannot
// dial, a Sentinel's failover) to log, as warnings with source "go-redis"
// (the logger's own component kept), instead of its plain-text lines on
// stderr, which broke the JSON log stream of a worker started while Redis
// was down (found in review, twenty-fifth session). go-redis has one logger per process: the
// last call's log is used. go-redis puts no credentials in these messages
// (addresses and dial errors).
func RouteRedisLogs(log zerolog.Logger) {
	l := log.With().Str("source", "go-redis").Logger()
	redisLog.Store(&l)
	redisLogOnce.Do(func() { redis.SetLogger(redisLogger{}) })
}

// redisLogger is go-redis's Logging, writing to redisLog.
type redisLogger struct{}

// Printf implements go-redis's internal.Logging.
func (redisLogger) Printf(_ context.Context, format string, v ...any) {
	l := redisLog.Load()
	if l == nil {
		return
	}
	msg := strings.TrimSpace(fmt.Sprintf(format, v...))
	l.Warn().Msg(msg)
}
