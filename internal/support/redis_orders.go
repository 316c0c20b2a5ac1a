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
	return &RedisOrders{c: c, prefix: prefix, catalog: cat}
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
// same key (counted in the repeats counter).
var refundScript = redis.NewScript(`
if ARGV[5] ~= '' and redis.call('HEXISTS', KEYS[3], ARGV[5]) == 1 then
  redis.call('INCR', KEYS[4])
  return 2
end
local done = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if done + tonumber(ARGV[2]) > tonumber(ARGV[3]) then return 0 end
redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2])
redis.call('RPUSH', KEYS[2], ARGV[4])
if ARGV[5] ~= '' then redis.call('HSET', KEYS[3], ARGV[5], '1') end
return 1
`)

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
	okN, err := refundScript.Run(ctx, r.c, []string{r.refundedKey(), r.RefundsListKey(), r.prefix + "demo:refund_keys", r.RepeatsKey()},
		rf.OrderID, rf.AmountCents, o.TotalCents, rec, rf.IdempotencyKey).Int()
	if err != nil {
		return refundError(ctx, rf.OrderID, err, redisNotApplied(err))
	}
	if okN == 0 {
		return ErrAmountTooLarge
	}
	return nil
}

// redisNotApplied reports whether err, from the refund script's call, says
// the script did not run: the connection was never made (a dial error, no
// free connection in the pool, the client closed), or Redis answered with
// an error (READONLY, LOADING, BUSY, a script error: the script's only
// failures come before its first write). Anything else (a reply lost with
// its connection, a read that timed out) came after the request was written.
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
