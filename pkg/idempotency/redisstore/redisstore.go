// Package redisstore is the Redis backend of idempotency.Store (go-redis/v9).
//
// Every operation is one Lua script (EVALSHA, one round trip, atomic); Effects
// reads the invocation's index set and its records (two round trips). Keys:
// records at Config.Prefix + key ("idem:<agent>:<tool>:<hash>" with the
// default empty Prefix), the index of an invocation at Config.Prefix +
// Config.IndexPrefix + invocation id. In-progress records expire after lease
// + Config.LeaseMargin, completed ones after the retention passed to
// Complete. Lease times come from the Redis server clock. No KEYS or SCAN.
//
// Redis Cluster: a record and its invocation's index are two keys a script
// touches together, so they must share a slot; this package does not add hash
// tags, so it supports standalone Redis (and Sentinel), not Cluster.
package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// Defaults for Config.
const (
	// DefaultIndexPrefix names invocation index sets.
	DefaultIndexPrefix = "idem-invocation:"
	// DefaultLeaseMargin is how long an in-progress record outlives its
	// lease before Redis deletes it.
	DefaultLeaseMargin = time.Minute
	// IndexSlack is how much longer than its longest-lived record an index
	// set is kept, so that it is extended rarely (each extension is a write).
	IndexSlack = time.Hour
)

const backend = "redis"

// Config configures a Store.
type Config struct {
	// Prefix is prepended to every Redis key the store writes (records and
	// index sets); default none.
	Prefix string
	// IndexPrefix names an invocation's index set (after Prefix); default
	// DefaultIndexPrefix.
	IndexPrefix string
	// LeaseMargin: in-progress records expire lease + LeaseMargin after the
	// last claim or renewal; default DefaultLeaseMargin.
	LeaseMargin time.Duration
}

// Store is an idempotency.Store on Redis. Safe for concurrent use.
type Store struct {
	c   redis.UniversalClient
	cfg Config
}

var _ idempotency.Store = (*Store)(nil)

// New returns a Store using c. It does not contact Redis: an unreachable
// server shows up as *idempotency.StoreError on each call.
func New(c redis.UniversalClient, cfg Config) *Store {
	if cfg.IndexPrefix == "" {
		cfg.IndexPrefix = DefaultIndexPrefix
	}
	if cfg.LeaseMargin <= 0 {
		cfg.LeaseMargin = DefaultLeaseMargin
	}
	return &Store{c: c, cfg: cfg}
}

func (s *Store) recordKey(key string) string { return s.cfg.Prefix + key }

func (s *Store) indexKey(invocationID string) string {
	return s.cfg.Prefix + s.cfg.IndexPrefix + invocationID
}

func storeErr(op string, err error) error {
	return &idempotency.StoreError{Backend: backend, Op: op, Err: err}
}

// millis rounds d up to whole milliseconds, at least 1.
func millis(d time.Duration) int64 {
	ms := (d + time.Millisecond - 1) / time.Millisecond
	return max(int64(ms), 1)
}

// Claim implements idempotency.Store.
func (s *Store) Claim(ctx context.Context, req idempotency.ClaimRequest) (idempotency.Claim, error) {
	if err := req.Validate(); err != nil {
		return idempotency.Claim{}, err
	}
	res, err := claimScript.Run(ctx, s.c, []string{s.recordKey(req.Key), s.indexKey(req.InvocationID)},
		req.Owner, millis(req.Lease), millis(s.cfg.LeaseMargin), req.ArgsHash, req.InvocationID, req.Agent, req.Tool, req.Key, millis(IndexSlack)).StringSlice()
	if err != nil {
		return idempotency.Claim{}, storeErr("claim", err)
	}
	if len(res) != 2 {
		return idempotency.Claim{}, storeErr("claim", fmt.Errorf("unexpected script reply %q", res))
	}
	rec, err := parseRecord(res[1])
	if err != nil {
		return idempotency.Claim{}, storeErr("claim", err)
	}
	return idempotency.Claim{Outcome: idempotency.Outcome(res[0]), Record: rec}, nil
}

// fence turns a script's fence answer into ErrLeaseLost / ErrNotOwner.
func fence(key string, res []string) error {
	switch res[0] {
	case "ok":
		return nil
	case "lost":
		return fmt.Errorf("%w: %s", idempotency.ErrLeaseLost, key)
	case "not_owner":
		return fmt.Errorf("%w: %s is held by %s", idempotency.ErrNotOwner, key, res[1])
	case "completed":
		return fmt.Errorf("%w: %s is already completed", idempotency.ErrNotOwner, key)
	}
	return fmt.Errorf("unexpected script reply %q", res)
}

func (s *Store) runFenced(ctx context.Context, op string, script *redis.Script, t idempotency.Ticket, keys []string, args ...any) ([]string, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	res, err := script.Run(ctx, s.c, keys, args...).StringSlice()
	if err != nil {
		return nil, storeErr(op, err)
	}
	if len(res) == 0 {
		return nil, storeErr(op, fmt.Errorf("empty script reply"))
	}
	if res[0] == "not_owner" && len(res) < 2 {
		res = append(res, "")
	}
	return res, nil
}

// Renew implements idempotency.Store.
func (s *Store) Renew(ctx context.Context, t idempotency.Ticket, lease time.Duration) (time.Time, error) {
	res, err := s.runFenced(ctx, "renew", renewScript, t, []string{s.recordKey(t.Key)}, t.Owner, millis(lease), millis(s.cfg.LeaseMargin))
	if err != nil {
		return time.Time{}, err
	}
	if err := fence(t.Key, res); err != nil {
		return time.Time{}, err
	}
	if len(res) < 2 {
		return time.Time{}, storeErr("renew", fmt.Errorf("unexpected script reply %q", res))
	}
	return parseMillis(res[1])
}

// Complete implements idempotency.Store.
func (s *Store) Complete(ctx context.Context, t idempotency.Ticket, result json.RawMessage, retention time.Duration) error {
	if retention <= 0 {
		return fmt.Errorf("idempotency: complete %s: retention must be > 0", t.Key)
	}
	res, err := s.runFenced(ctx, "complete", completeScript, t, []string{s.recordKey(t.Key), s.indexKey(t.InvocationID)},
		t.Owner, []byte(result), millis(retention), t.Key, millis(IndexSlack))
	if err != nil {
		return err
	}
	return fence(t.Key, res)
}

// Release implements idempotency.Store.
func (s *Store) Release(ctx context.Context, t idempotency.Ticket) error {
	res, err := s.runFenced(ctx, "release", releaseScript, t, []string{s.recordKey(t.Key), s.indexKey(t.InvocationID)}, t.Owner, t.Key)
	if err != nil {
		return err
	}
	return fence(t.Key, res)
}

// Effects implements idempotency.Store: SMEMBERS of the index, then MGET of
// the records. Index members whose record expired are skipped.
func (s *Store) Effects(ctx context.Context, invocationID string) ([]idempotency.Record, error) {
	keys, err := s.c.SMembers(ctx, s.indexKey(invocationID)).Result()
	if err != nil {
		return nil, storeErr("effects", err)
	}
	if len(keys) == 0 {
		return nil, nil
	}
	rkeys := make([]string, len(keys))
	for i, k := range keys {
		rkeys[i] = s.recordKey(k)
	}
	vals, err := s.c.MGet(ctx, rkeys...).Result()
	if err != nil {
		return nil, storeErr("effects", err)
	}
	out := make([]idempotency.Record, 0, len(keys))
	for _, v := range vals {
		str, ok := v.(string)
		if !ok {
			continue // expired or released
		}
		rec, err := parseRecord(str)
		if err != nil {
			return nil, storeErr("effects", err)
		}
		if rec.InvocationID == invocationID {
			out = append(out, rec)
		}
	}
	idempotency.SortRecords(out)
	return out, nil
}

// wireRecord is the JSON the scripts store. Numbers are float64 because
// cjson may write large numbers in exponent form.
type wireRecord struct {
	Key         string  `json:"key"`
	Invocation  string  `json:"invocation"`
	Agent       string  `json:"agent"`
	Tool        string  `json:"tool"`
	State       string  `json:"state"`
	Owner       string  `json:"owner"`
	LeaseUntil  float64 `json:"lease_until"`
	ArgsHash    string  `json:"args_hash"`
	Result      *string `json:"result"`
	Attempts    float64 `json:"attempts"`
	CreatedAt   float64 `json:"created_at"`
	CompletedAt float64 `json:"completed_at"`
}

func msTime(ms float64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(ms))
}

func parseRecord(s string) (idempotency.Record, error) {
	var w wireRecord
	if err := json.Unmarshal([]byte(s), &w); err != nil {
		return idempotency.Record{}, fmt.Errorf("decode record: %w", err)
	}
	r := idempotency.Record{
		Key: w.Key, InvocationID: w.Invocation, Agent: w.Agent, Tool: w.Tool,
		State: idempotency.State(w.State), Owner: w.Owner, LeaseUntil: msTime(w.LeaseUntil),
		ArgsHash: w.ArgsHash, Attempts: int(w.Attempts),
		CreatedAt: msTime(w.CreatedAt), CompletedAt: msTime(w.CompletedAt),
	}
	if w.Result != nil {
		r.Result = json.RawMessage(*w.Result)
	}
	return r, nil
}

func parseMillis(s string) (time.Time, error) {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(ms), nil
}
