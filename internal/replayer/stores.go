package replayer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/streams"
)

// ErrOtherStores is returned (wrapped) by the commands that read the
// fleet's stores (show, replay, drain) when the stores this replayer is
// configured with are not the ones the fleet's workers record in the worker
// consumer: another redis.prefix or db, another Redis server, NATS KV for a
// fleet on Redis or the reverse. Such stores hold none of the fleet's
// sessions, invocation records, tool effects or cooldowns: show would say
// "tool effects recorded (0): none" for an invocation whose refund
// completed, and a replay would not pause for the fleet's cooldowns. It is
// a configuration error: exit code 3 (ExitUsage), as for a bad command line
// or configuration file; restarting cannot help.
var ErrOtherStores = errors.New("not the fleet's stores")

// checkFleetStores compares the stores of f.Cfg with the ones the fleet's
// workers record in the worker consumer's description
// (streams.WorkerStoresOf: "redis db=<n> prefix=<p> id=<id>", or
// "nats-kv"), and returns an error wrapping ErrOtherStores, naming both,
// when they differ. On Redis the id is the one the stores keep at
// <redis.prefix>stores:id (app.StoresIDKey), read with GET only: a replayer
// never sets it (app.RedisStoresID does, for workers), so a Redis with no id
// where the consumer records one is other stores. rdb is the replayer's
// Redis client (nil without redis.url).
//
// A consumer that records no stores (made by an earlier version or by a
// tool), or records a Redis store without its id (earlier-version workers:
// the db and prefix are compared, the server cannot be), and a missing
// worker consumer are not refused: the check cannot tell, and says so on
// warn.
func checkFleetStores(ctx context.Context, f *Fleet, rdb *redis.Client, warn io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sc := f.Streams
	where := fmt.Sprintf("worker consumer %s on %s", sc.WorkerConsumer, sc.RequestsStream)
	cons, err := f.JS.Consumer(ctx, sc.RequestsStream, sc.WorkerConsumer)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound), errors.Is(err, jetstream.ErrStreamNotFound):
		fmt.Fprintf(warn, "dlq-replayer: warning: no %s: cannot check that this replayer's stores are the fleet's (its workers record theirs there)\n", where)
		return nil
	case err != nil:
		return fmt.Errorf("%s (to check that this replayer's stores are the fleet's): %w", where, err)
	}
	recorded := streams.WorkerStoresOf(cons.CachedInfo().Config.Description)
	wcfg := f.Cfg.Worker()
	legacy := app.StoresIdentity(wcfg) // "nats-kv", or "redis db=<n> prefix=<p>"
	own, hint := legacy, ""
	if rdb != nil {
		key := f.Cfg.Redis.Prefix + app.StoresIDKey
		id, err := rdb.Get(ctx, key).Result()
		switch {
		case errors.Is(err, redis.Nil):
			own += fmt.Sprintf(" (no stores id at %s: no worker ever used them)", key)
		case err != nil:
			return fmt.Errorf("redis: read the stores id %s (to check that this replayer's stores are the fleet's): %w", key, err)
		default:
			own = app.RedisStoresIdentity(wcfg, id)
		}
		hint = fmt.Sprintf("point --redis-url (AGENTFLEET_REDIS_URL) and redis.prefix (AGENTFLEET_REDIS_PREFIX) at the workers' Redis, db and prefix; "+
			"an id is the one the Redis server keeps at <prefix>%s: another id is another server, or one that lost its data", app.StoresIDKey)
	}
	switch {
	case recorded == "":
		fmt.Fprintf(warn, "dlq-replayer: warning: the %s records no stores (made by an earlier version or by a tool): cannot check that this replayer's stores (%s) are the fleet's\n", where, own)
		return nil
	case recorded == own:
		return nil
	case rdb != nil && recorded == legacy:
		fmt.Fprintf(warn, "dlq-replayer: warning: the %s records the stores %q without their id (workers of an earlier version): the db and prefix match, but not whether this is the fleet's Redis server\n", where, recorded)
		return nil
	case rdb == nil:
		hint = "the fleet's workers use Redis: give this replayer the workers' --redis-url (AGENTFLEET_REDIS_URL) and redis.prefix"
	case recorded == "nats-kv":
		hint = "the fleet's workers use NATS KV stores: run this replayer without redis.url (--redis-url, AGENTFLEET_REDIS_URL)"
	}
	return fmt.Errorf("%w: the fleet's workers record the stores %q (%s), this replayer's are %q: "+
		"their sessions, invocation records, tool effects and cooldowns are not these (show would report no effects done, replays would not pause for the fleet's cooldowns); %s",
		ErrOtherStores, recorded, where, own, hint)
}
