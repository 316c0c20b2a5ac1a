package support

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/redis/go-redis/v9"
)

// RefundsKey is the Redis list (under the configured prefix) to which every
// executed demo refund appends one JSON record
// {"invocation_id","order_id","amount_cents"}, so anyone can count effects:
// `redis-cli LRANGE demo:refunds 0 -1`.
const RefundsKey = "demo:refunds"

// RedisOrders is the demo orders service of the worker: orders come from a
// fixed catalogue (DemoOrders), refunds are real effects in Redis. A refund
// checks and books the refundable amount and appends its record in one
// atomic script, so the list is exactly the set of refunds that happened.
type RedisOrders struct {
	c      redis.UniversalClient
	prefix string
	// sendOnce: the client may resend a command whose reply was lost, so
	// each booking goes as a command it never resends (runScriptOnce).
	sendOnce bool

	mu      sync.RWMutex
	catalog map[string]Order
}

// NewRedisOrders returns the service with the demo catalogue, keys under
// prefix ("" in production, so the list is demo:refunds).
func NewRedisOrders(c redis.UniversalClient, prefix string) *RedisOrders {
	cat := map[string]Order{}
	for _, o := range DemoOrders() {
		o.Status = "delivered"
		cat[o.ID] = o
	}
	return &RedisOrders{c: c, prefix: prefix, catalog: cat, sendOnce: MayResend(c)}
}

// ClientResends says whether the service's client may resend a command
// whose reply was lost (for a client NewRedisOrders cannot see into: an
// auto-pipeliner over a client of its own, whose retries are that
// client's) and returns r. A booking is never sent twice: with a client
// that may resend, each goes as a command the client never resends, which
// costs an auto-pipeliner a round trip of its own (a command of another
// retry policy splits its batch); with one that never resends, the
// booking rides the batch like any other command.
func (r *RedisOrders) ClientResends(may bool) *RedisOrders {
	r.sendOnce = may
	return r
}

// MayResend reports whether c may send a command again after its reply
// was lost: a plain client with a positive MaxRetries, and any other kind
// (a cluster client resends after redirects and lost replies; an
// auto-pipeliner's retries are its client's, which it does not tell).
func MayResend(c redis.UniversalClient) bool {
	if pc, ok := c.(*redis.Client); ok {
		return pc.Options().MaxRetries > 0
	}
	return true
}

func (r *RedisOrders) refundedKey() string { return r.prefix + "demo:refunded_cents" }

// RefundsListKey returns the full key of the refunds list.
func (r *RedisOrders) RefundsListKey() string { return r.prefix + RefundsKey }

// RepeatsKey is the full key of the counter of refunds asked for again
// under an idempotency key already booked (and not booked again): repeats
// that got past the idempotency wrapper (a worker killed between the
// booking and the claim's completion, a reply lost and the claim released)
// and that this service's own key check stopped.
func (r *RedisOrders) RepeatsKey() string { return r.prefix + RepeatsKey }

// RepeatsKey is the repeats counter's key without a prefix (RedisOrders.RepeatsKey).
const RepeatsKey = "demo:refund_repeats"

// Get implements Orders.
func (r *RedisOrders) Get(ctx context.Context, orderID string) (Order, error) {
	r.mu.RLock()
	o, ok := r.catalog[orderID]
	r.mu.RUnlock()
	if !ok {
		return Order{}, ErrOrderNotFound
	}
	refunded, err := r.c.HGet(ctx, r.refundedKey(), orderID).Int()
	if err != nil && err != redis.Nil {
		if cerr := ctxEnded(ctx); cerr != nil {
			// Cut short by the caller (an invocation cancelled, a tool
			// timeout): not an outage to report to the model (found in
			// review, twentieth session).
			return Order{}, fmt.Errorf("orders: get %s: %w", orderID, endedError(cerr, err))
		}
		return Order{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	o.RefundedCents = refunded
	if refunded >= o.TotalCents {
		o.Status = "refunded"
	}
	return o, nil
}

// KEYS: refunded hash, refunds list, booked idempotency keys (hash), the
// repeats counter. ARGV: order id, amount, total, record, idempotency key
// ("" for none). Returns 1 booked, 0 too large, 2 booked before under the
// same key (counted in the repeats counter when Redis can).
//
// Redis refuses a script's first write when it is out of memory (maxmemory
// with noeviction: -OOM) and lets the writes after it run, so the booking
// is refused whole (HINCRBY is its first write: known not applied, as
// redisNotApplied reads an error reply). The repeat path's counter is the
// path's only write and a statistic: redis.pcall ignores its refusal, so a
// refund asked again under a booked key still answers "booked before".
// With redis.call the OOM error was the answer, read as known not applied:
// a booked refund reported as a plain outage (found in review, twentieth
// session).
var refundScript = redis.NewScript(refundScriptSrc)

const refundScriptSrc = `
if ARGV[5] ~= '' and redis.call('HEXISTS', KEYS[3], ARGV[5]) == 1 then
  redis.pcall('INCR', KEYS[4])
  return 2
end
local done = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if done + tonumber(ARGV[2]) > tonumber(ARGV[3]) then return 0 end
redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2])
redis.call('RPUSH', KEYS[2], ARGV[4])
if ARGV[5] ~= '' then redis.call('HSET', KEYS[3], ARGV[5], '1') end
return 1
`

// Refund implements Orders.
func (r *RedisOrders) Refund(ctx context.Context, rf Refund) error {
	if rf.AmountCents <= 0 {
		return fmt.Errorf("%w: %d cents", ErrAmountNotPositive, rf.AmountCents)
	}
	r.mu.RLock()
	o, ok := r.catalog[rf.OrderID]
	r.mu.RUnlock()
	if !ok {
		return ErrOrderNotFound
	}
	rec, err := json.Marshal(map[string]any{"invocation_id": rf.InvocationID, "order_id": rf.OrderID, "amount_cents": rf.AmountCents})
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("orders: refund %s: %w", rf.OrderID, err) // not sent
	}
	keys := []string{r.refundedKey(), r.RefundsListKey(), r.prefix + "demo:refund_keys", r.RepeatsKey()}
	var cmd *redis.Cmd
	if r.sendOnce {
		cmd = runScriptOnce(ctx, r.c, refundScript, refundScriptSrc, keys, rf.OrderID, rf.AmountCents, o.TotalCents, rec, rf.IdempotencyKey)
	} else {
		cmd = refundScript.Run(ctx, r.c, keys, rf.OrderID, rf.AmountCents, o.TotalCents, rec, rf.IdempotencyKey)
	}
	okN, err := cmd.Int()
	if err != nil {
		return refundError(ctx, rf.OrderID, err, redisNotApplied(err))
	}
	if okN == 0 {
		return ErrAmountTooLarge
	}
	return nil
}

// noRetryCmd is a command go-redis sends at most once: its NoRetry
// method turns off every resend of a command that may have reached the
// server (a *redis.Client's MaxRetries loop, a ring's, a cluster's
// MaxRedirects loop, which resends after a lost reply even with MaxRetries
// off). A command that never reached the wire may still be sent on another
// connection, its first execution; MOVED, ASK and READONLY redirections,
// answers that Redis did not apply it, still go to the right node.
type noRetryCmd struct{ *redis.Cmd }

// NoRetry implements redis.Cmder.
func (noRetryCmd) NoRetry() bool { return true }

// runScriptOnce runs script (whose source is src) as Script.Run does,
// EVALSHA and then EVAL when Redis does not hold the script (NOSCRIPT: not
// run), with each command sent at most once (noRetryCmd).
//
// The booking script must not be resent: go-redis resends a command whose
// reply was lost, which Redis may have applied (an unkeyed refund booked
// twice), and the error the caller then gets is the resend's (a refused
// dial, a READONLY reply), which redisNotApplied reads as "never ran": a
// booked refund was answered as a plain retryable outage. ConnectRedis
// turns retries on when redis.url sets max_retries>0, and a cluster
// client resends whatever its MaxRetries; so rather than guess from the
// client's options whether a resend may have happened, the booking is
// never resent (found in review, twentieth session).
func runScriptOnce(ctx context.Context, c redis.UniversalClient, script *redis.Script, src string, keys []string, args ...any) *redis.Cmd {
	cmdArgs := make([]any, 0, 3+len(keys)+len(args))
	cmdArgs = append(cmdArgs, "evalsha", script.Hash(), len(keys))
	for _, k := range keys {
		cmdArgs = append(cmdArgs, k)
	}
	cmdArgs = append(cmdArgs, args...)
	cmd := redis.NewCmd(ctx, cmdArgs...)
	_ = c.Process(ctx, noRetryCmd{cmd})
	if !redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		return cmd
	}
	cmdArgs[0], cmdArgs[1] = "eval", src
	cmd = redis.NewCmd(ctx, cmdArgs...)
	_ = c.Process(ctx, noRetryCmd{cmd})
	return cmd
}

// redisNotApplied reports whether err, from the refund script's call
// (runScriptOnce: never resent, so err is that of the one request sent),
// says the script did not run: the connection was never made (a dial
// error, no free connection in the pool, the client closed), or Redis
// answered with an error (READONLY, LOADING, BUSY, OOM, a script error: the
// script's only failures come before its first write). Anything else (a
// reply lost with its connection, a read that timed out) came after the
// request was written.
func redisNotApplied(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	if errors.Is(err, redis.ErrClosed) || errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrPoolExhausted) {
		return true
	}
	var rerr redis.Error
	return errors.As(err, &rerr)
}

// Refunds reads every refund record from the list.
func (r *RedisOrders) Refunds(ctx context.Context) ([]Refund, error) {
	raw, err := r.c.LRange(ctx, r.RefundsListKey(), 0, -1).Result()
	if err != nil {
		return nil, err
	}
	out := make([]Refund, 0, len(raw))
	for _, s := range raw {
		var rf Refund
		if err := json.Unmarshal([]byte(s), &rf); err != nil {
			return nil, fmt.Errorf("support: bad refund record %q: %w", s, err)
		}
		out = append(out, rf)
	}
	return out, nil
}
