package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/support"
)

// minimalStore is the only state the minimal consumer touches, one round
// trip per call.
type minimalStore interface {
	// appendEvents adds session events in order, in one write (an RPUSH
	// on Redis, a put of one value on NATS KV).
	appendEvents(ctx context.Context, session string, evs ...[]byte) error
	// refundedCents is get_order's read.
	refundedCents(ctx context.Context, order string) error
	// claim takes the idempotency key (SET NX); false: already claimed.
	claim(ctx context.Context, key, owner string) (bool, error)
	// refund is the effect: the refund of amount cents of order by
	// invocation under the idempotency key (on Redis the demo orders' own
	// booking, as the fleet's refund_order tool does it, key included;
	// support.ErrAmountTooLarge when the order has no refundable amount
	// left).
	refund(ctx context.Context, invocation, order string, amount int, key string) error
	// complete stores the tool result under the key (SET).
	complete(ctx context.Context, key string, result []byte) error
	// completed reports whether the key holds a stored result (not only
	// a claim): a look-up on the redelivery path only.
	completed(ctx context.Context, key string) (bool, error)
	// release drops a claim whose effect failed, so a redelivery can
	// claim the key again and run the effect (the failure path only).
	release(ctx context.Context, key string) error
	// refunds returns every refund record.
	refunds(ctx context.Context) ([][]byte, error)
}

// redisMinimal keeps the minimal consumer's state in Redis, under prefix;
// the orders are the demo orders service the fleet's tools use, under the
// same prefix, so get_order's read and the refund are the same I/O as the
// fleet's.
type redisMinimal struct {
	rdb    *redis.Client
	prefix string
	orders *support.RedisOrders
}

func newRedisMinimal(rdb *redis.Client, prefix string) *redisMinimal {
	return &redisMinimal{rdb: rdb, prefix: prefix, orders: support.NewRedisOrders(rdb, prefix)}
}

func (s *redisMinimal) appendEvents(ctx context.Context, session string, evs ...[]byte) error {
	vals := make([]any, len(evs))
	for i, ev := range evs {
		vals[i] = ev
	}
	return s.rdb.RPush(ctx, s.prefix+"sess:{"+session+"}:events", vals...).Err()
}

func (s *redisMinimal) refundedCents(ctx context.Context, order string) error {
	_, err := s.orders.Get(ctx, order)
	return err
}

func (s *redisMinimal) claim(ctx context.Context, key, owner string) (bool, error) {
	return s.rdb.SetNX(ctx, s.prefix+"idem:"+key, owner, 30*time.Second).Result()
}

func (s *redisMinimal) refund(ctx context.Context, invocation, order string, amount int, key string) error {
	return s.orders.Refund(ctx, support.Refund{InvocationID: invocation, OrderID: order, AmountCents: amount, IdempotencyKey: key})
}

func (s *redisMinimal) complete(ctx context.Context, key string, result []byte) error {
	return s.rdb.Set(ctx, s.prefix+"idem:"+key, result, 24*time.Hour).Err()
}

func (s *redisMinimal) completed(ctx context.Context, key string) (bool, error) {
	v, err := s.rdb.Get(ctx, s.prefix+"idem:"+key).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	return strings.HasPrefix(v, "{"), err // a result is JSON; a claim is its owner's name
}

func (s *redisMinimal) release(ctx context.Context, key string) error {
	return s.rdb.Del(ctx, s.prefix+"idem:"+key).Err()
}

func (s *redisMinimal) refunds(ctx context.Context) ([][]byte, error) {
	raw, err := s.rdb.LRange(ctx, s.orders.RefundsListKey(), 0, -1).Result()
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(raw))
	for i, r := range raw {
		out[i] = []byte(r)
	}
	return out, nil
}

// kvMinimal keeps the minimal consumer's state in a NATS KV bucket (the
// embedded mode, where the fleet uses the NATS KV stores).
type kvMinimal struct {
	kv  jetstream.KeyValue
	seq atomic.Uint64 // makes every put key unique
}

func newKVMinimal(ctx context.Context, js jetstream.JetStream, bucket string) (*kvMinimal, error) {
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bucket})
	if err != nil {
		return nil, fmt.Errorf("loadgen: minimal bucket: %w", err)
	}
	return &kvMinimal{kv: kv}, nil
}

func kvToken(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

func (s *kvMinimal) appendEvents(ctx context.Context, session string, evs ...[]byte) error {
	// One value per append: a JSON array of the events.
	b := append([]byte{'['}, bytes.Join(evs, []byte{','})...)
	b = append(b, ']')
	_, err := s.kv.Put(ctx, "sess."+kvToken(session)+"."+strconv.FormatUint(s.seq.Add(1), 10), b)
	return err
}

func (s *kvMinimal) refundedCents(ctx context.Context, order string) error {
	_, err := s.kv.Get(ctx, "order."+kvToken(order))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	return err
}

func (s *kvMinimal) claim(ctx context.Context, key, owner string) (bool, error) {
	_, err := s.kv.Create(ctx, "idem."+kvToken(key), []byte(owner))
	if errors.Is(err, jetstream.ErrKeyExists) {
		return false, nil
	}
	return err == nil, err
}

func (s *kvMinimal) refund(ctx context.Context, invocation, order string, amount int, _ string) error {
	rec, err := json.Marshal(map[string]any{"invocation_id": invocation, "order_id": order, "amount_cents": amount})
	if err != nil {
		return err
	}
	_, err = s.kv.Put(ctx, "refund."+strconv.FormatUint(s.seq.Add(1), 10), rec)
	return err
}

func (s *kvMinimal) complete(ctx context.Context, key string, result []byte) error {
	_, err := s.kv.Put(ctx, "idem."+kvToken(key), result)
	return err
}

func (s *kvMinimal) completed(ctx context.Context, key string) (bool, error) {
	e, err := s.kv.Get(ctx, "idem."+kvToken(key))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return bytes.HasPrefix(e.Value(), []byte("{")), nil // a result is JSON; a claim is its owner's name
}

func (s *kvMinimal) release(ctx context.Context, key string) error {
	return s.kv.Delete(ctx, "idem."+kvToken(key))
}

func (s *kvMinimal) refunds(ctx context.Context) ([][]byte, error) {
	lister, err := s.kv.ListKeys(ctx)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for k := range lister.Keys() {
		if !strings.HasPrefix(k, "refund.") {
			continue
		}
		e, err := s.kv.Get(ctx, k)
		if err != nil {
			return nil, err
		}
		out = append(out, e.Value())
	}
	return out, nil
}

// countRefunds counts refund records of this phase (invocation ids under
// idPrefix) and the (invocation, order) pairs recorded more than once, and
// returns the number of records per invocation id (for Run's cross-check
// with the completed invocations).
func countRefunds(records [][]byte, idPrefix string) (refunds, duplicates int, byInvocation map[string]int, err error) {
	seen := map[string]int{}
	byInvocation = map[string]int{}
	for _, raw := range records {
		var r struct {
			InvocationID string `json:"invocation_id"`
			OrderID      string `json:"order_id"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return 0, 0, nil, fmt.Errorf("loadgen: bad refund record %q: %w", raw, err)
		}
		if !strings.HasPrefix(r.InvocationID, idPrefix+"-") {
			continue
		}
		refunds++
		seen[r.InvocationID+"|"+r.OrderID]++
		byInvocation[r.InvocationID]++
	}
	for _, c := range seen {
		if c > 1 {
			duplicates++
		}
	}
	return refunds, duplicates, byInvocation, nil
}
