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
// or configuration file; restarting cannot help. A drain that finds it at a
// later pass (the fleet's workers moved to other stores while it ran)
// replays nothing in that pass and goes on (see RuleStores).
var ErrOtherStores = errors.New("not the fleet's stores")

// ErrStoresNotChecked is returned (wrapped) when the stores check could not
// be decided: the worker consumer could not be read for another reason than
// its absence (a NATS permission error, a JetStream timeout), or the
// replayer's Redis did not answer or could not read the stores' id. show and
// replay --dry-run, which only read, warn ("stores not checked: …") and go
// on; a real replay refuses to run without the check (exit 1, as when it
// cannot reach its stores), and so does drain at start; a drain pass that
// cannot decide replays nothing and the next pass tries again.
var ErrStoresNotChecked = errors.New("stores not checked")

// RuleStores is the rule label of MetricHalts counted by each drain pass
// that replays nothing because the fleet's workers record other stores than
// the drain's (ErrOtherStores found at a pass after start), so the
// AgentfleetDLQReplayHalted alert fires while the drain is held.
const RuleStores = "stores"

// storesCheck says what openFleet does about the stores check
// (checkFleetStores).
type storesCheck int

const (
	// skipStoresCheck makes none (OpenFleet: stats, list, park, purge,
	// which read no store).
	skipStoresCheck storesCheck = iota
	// requireStoresCheck is replay's and drain's: other stores are refused
	// (ErrOtherStores, exit 3) and a check that cannot be decided fails the
	// command (ErrStoresNotChecked, exit 1): they replay, and a replay on
	// other stores could repeat a refund or skip the fleet's cooldown.
	requireStoresCheck
	// tryStoresCheck is show's and replay --dry-run's: other stores are
	// refused, but a check that cannot be decided (Redis or the worker
	// consumer out of reach) is a warning and the command goes on: they
	// change nothing, and on-call needs them during an outage.
	tryStoresCheck
)

// storesCheckTimeout bounds the stores check's consumer info and GET. A
// request the replayer's NATS user may not publish (a permission error)
// gets no answer and ends here. Tests shorten it.
var storesCheckTimeout = 10 * time.Second

// checkFleetStores compares the stores of f.Cfg with the ones the fleet's
// workers record in the worker consumer's description
// (streams.WorkerStoresOf: "redis db=<n> prefix=<p> id=<id>", or
// "nats-kv"), and returns an error wrapping ErrOtherStores, naming both,
// when they differ. On Redis the id is the one the stores keep at
// <redis.prefix>stores:id (app.StoresIDKey), read with GET on
// f.storesRedis only: a replayer never sets it (app.RedisStoresID does, for
// workers), so a Redis with no id where the consumer records one is other
// stores (or the fleet's Redis after it lost its data: its idempotency
// records are gone too, so a replay is refused all the same).
//
// A consumer that records no stores (made by an earlier version or by a
// tool), or records a Redis store without its id (earlier-version workers:
// the db and prefix are compared, the server cannot be), and a missing
// worker consumer are not refused: the check cannot tell, and says so in
// warning. An error reading the consumer or the id is returned wrapping
// ErrStoresNotChecked: the check could not be decided; the caller chooses
// (storesCheck).
func checkFleetStores(ctx context.Context, f *Fleet) (warning string, err error) {
	ctx, cancel := context.WithTimeout(ctx, storesCheckTimeout)
	defer cancel()
	sc := f.Streams
	where := fmt.Sprintf("worker consumer %s on %s", sc.WorkerConsumer, sc.RequestsStream)
	cons, err := f.JS.Consumer(ctx, sc.RequestsStream, sc.WorkerConsumer)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound), errors.Is(err, jetstream.ErrStreamNotFound):
		return fmt.Sprintf("no %s: cannot check that this replayer's stores are the fleet's (its workers record theirs there)", where), nil
	case err != nil:
		api := fmt.Sprintf("$JS.API.CONSUMER.INFO.%s.%s", sc.RequestsStream, sc.WorkerConsumer)
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			// NATS answers a request its user may not publish with none.
			err = fmt.Errorf("no answer within %v (JetStream busy, or this replayer's NATS user may not publish %s): %w", storesCheckTimeout, api, err)
		} else {
			err = fmt.Errorf("%w (the replayer's NATS user needs to publish %s)", err, api)
		}
		return "", fmt.Errorf("%w: cannot read the %s, where the fleet's workers record their stores: %w", ErrStoresNotChecked, where, err)
	}
	recorded := streams.WorkerStoresOf(cons.CachedInfo().Config.Description)
	wcfg := f.Cfg.Worker()
	legacy := app.StoresIdentity(wcfg) // "nats-kv", or "redis db=<n> prefix=<p>"
	own, hint := legacy, ""
	rdb := f.storesRedis
	if rdb != nil {
		key := f.Cfg.Redis.Prefix + app.StoresIDKey
		id, err := rdb.Get(ctx, key).Result()
		switch {
		case errors.Is(err, redis.Nil):
			// Found in review, nineteenth session: "no worker ever used
			// them" alone misled when the fleet's own Redis lost its data.
			own += fmt.Sprintf(" (no stores id at %s: either no worker ever used these stores (not the workers' Redis, db or prefix), "+
				"or this Redis lost its data, idempotency records included: a restart without persistence, an eviction, a FLUSHALL)", key)
		case err != nil:
			return "", fmt.Errorf("%w: redis: cannot read the stores id %s: %w (the replayer's Redis user needs GET on it)", ErrStoresNotChecked, key, err)
		default:
			own = app.RedisStoresIdentity(wcfg, id)
		}
		hint = fmt.Sprintf("point --redis-url (AGENTFLEET_REDIS_URL) and redis.prefix (AGENTFLEET_REDIS_PREFIX) at the workers' Redis, db and prefix; "+
			"an id is the one the Redis server keeps at <prefix>%s: another id is another server, or one that lost its data", app.StoresIDKey)
	}
	switch {
	case recorded == "":
		return fmt.Sprintf("the %s records no stores (made by an earlier version or by a tool): cannot check that this replayer's stores (%s) are the fleet's", where, own), nil
	case recorded == own:
		return "", nil
	case rdb != nil && recorded == legacy:
		return fmt.Sprintf("the %s records the stores %q without their id (workers of an earlier version): the db and prefix match, but not whether this is the fleet's Redis server", where, recorded), nil
	case rdb == nil:
		hint = "the fleet's workers use Redis: give this replayer the workers' --redis-url (AGENTFLEET_REDIS_URL) and redis.prefix"
	case recorded == "nats-kv":
		hint = "the fleet's workers use NATS KV stores: run this replayer without redis.url (--redis-url, AGENTFLEET_REDIS_URL)"
	}
	return "", fmt.Errorf("%w: the fleet's workers record the stores %q (%s), this replayer's are %q: "+
		"their sessions, invocation records, tool effects and cooldowns are not these (show would report no effects done, replays would not pause for the fleet's cooldowns); %s",
		ErrOtherStores, recorded, where, own, hint)
}

// warnStoresNotChecked writes, for show and replay --dry-run, that the
// stores check could not be decided (err wraps ErrStoresNotChecked) and that
// the command goes on without it.
func warnStoresNotChecked(w io.Writer, err error) {
	fmt.Fprintf(w, "dlq-replayer: warning: %v; going on without the check, as this command changes nothing: "+
		"make sure yourself that this replayer's stores are the workers' (--redis-url, redis.prefix); replay and drain refuse to run without the check\n", err)
}
