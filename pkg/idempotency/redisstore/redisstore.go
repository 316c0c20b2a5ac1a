// Package redisstore is the Redis backend of idempotency.Store (go-redis/v9).
//
// Claim is one pipelined round trip of plain commands (EXPIRE GT, SADD and
// EXPIRE NX on the index, then SET NX GET on the record, which is the atomic
// claim): a new key is claimed and a completed one answered without a
// script, because on Redis 7.0 a script that writes costs the server several
// times a bare SET. Only a claim that finds the key in progress runs the
// claim script (a second round trip) to decide from the key's TTL whether the
// lease is live and to take it over if not. Renew, Complete and Release are
// Lua scripts (EVALSHA, one round trip, atomic), fenced by the owner token;
// Complete and Release touch only the record. Effects reads the invocation's
// index set and its records (two round trips). Keys: records at
// Config.Prefix + key ("idem:<agent>:<tool>:<hash>" with the default empty
// Prefix), the index of an invocation at Config.Prefix + Config.IndexPrefix +
// invocation id. In-progress records expire after lease +
// Config.LeaseMargin, completed ones after the retention passed to Complete.
// Whether a lease is live is decided by the record's TTL, i.e. the Redis
// server clock, never a worker's; the stored layout and why the index
// outlives every record are described in scripts.go. No KEYS or SCAN.
//
// Redis Cluster: a record and its invocation's index are two keys a script
// touches together, so they must share a slot; this package does not add hash
// tags, so it supports standalone Redis (and Sentinel), not Cluster.
package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
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
	// IndexSlack is how much longer than the bound its records need an
	// index set is kept (see Store.indexTTL).
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
	// Retention is the retention Complete is usually given (the worker's
	// idempotency.retention); default idempotency.DefaultRetention. Every
	// claim keeps the invocation's index long enough for a Complete with
	// at most this retention, which then writes only the record; a longer
	// one also extends the index (one more script step).
	Retention time.Duration
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
	if cfg.Retention <= 0 {
		cfg.Retention = idempotency.DefaultRetention
	}
	return &Store{c: c, cfg: cfg}
}

func (s *Store) recordKey(key string) string { return s.cfg.Prefix + key }

func (s *Store) indexKey(invocationID string) string {
	return s.cfg.Prefix + s.cfg.IndexPrefix + invocationID
}

// indexTTL is the TTL every claim and renewal at least leaves the index:
// Retention + lease + LeaseMargin + IndexSlack. The record can be completed
// only before lease + LeaseMargin have passed (Redis then deletes it), so a
// completed record kept Retention from then still ends before the index, and
// the complete script need not touch it.
func (s *Store) indexTTL(lease time.Duration) time.Duration {
	return s.cfg.Retention + lease + s.cfg.LeaseMargin + IndexSlack
}

func storeErr(op string, err error) error {
	return &idempotency.StoreError{Backend: backend, Op: op, Err: err}
}

// needsSecondExtend reports whether a claim with this lease must extend the
// index again after its EXPIRE NX. Another claim's EXPIRE NX leaves the index
// at least Retention + LeaseMargin + IndexSlack (plus its own lease), while
// this claim's record needs at most lease + LeaseMargin (until its
// completion, or a renewal, which extends the index itself) + Retention (a
// Complete with a longer retention extends the index itself). So only a
// lease longer than IndexSlack can outgrow an index a concurrent claim
// created. Half of IndexSlack is the threshold, not all of it: the TTLs
// are whole seconds (go-redis's EXPIRE), and the other claim may have run a
// little earlier; half an hour of margin covers both.
func needsSecondExtend(lease time.Duration) bool { return lease > IndexSlack/2 }

// millis rounds d up to whole milliseconds, at least 1.
func millis(d time.Duration) int64 {
	ms := (d + time.Millisecond - 1) / time.Millisecond
	return max(int64(ms), 1)
}

// meta is the JSON line of a record: what does not change after the claim.
type meta struct {
	Invocation string `json:"invocation"`
	Agent      string `json:"agent"`
	Tool       string `json:"tool"`
	ArgsHash   string `json:"args_hash"`
}

// appendMeta appends m's JSON, byte for byte what json.Marshal(m) writes
// (TestAppendMetaMatchesMarshal, FuzzAppendMeta). Ids and names are plain
// ASCII almost always, which needs no escaping and no reflection (json.Marshal
// was the largest item of a claim's own CPU); anything else takes
// json.Marshal.
func appendMeta(b []byte, m meta) ([]byte, error) {
	if !plainJSON(m.Invocation) || !plainJSON(m.Agent) || !plainJSON(m.Tool) || !plainJSON(m.ArgsHash) {
		j, err := json.Marshal(m)
		return append(b, j...), err
	}
	b = append(b, `{"invocation":"`...)
	b = append(b, m.Invocation...)
	b = append(b, `","agent":"`...)
	b = append(b, m.Agent...)
	b = append(b, `","tool":"`...)
	b = append(b, m.Tool...)
	b = append(b, `","args_hash":"`...)
	b = append(b, m.ArgsHash...)
	return append(b, `"}`...), nil
}

// plainJSON reports whether json.Marshal writes s as it is between quotes:
// printable ASCII without '"', backslash and the HTML characters it escapes.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

func checkOwner(owner string) error {
	if strings.ContainsAny(owner, "\n") {
		return fmt.Errorf("idempotency: owner token %q contains a newline", owner)
	}
	return nil
}

// Claim implements idempotency.Store.
func (s *Store) Claim(ctx context.Context, req idempotency.ClaimRequest) (idempotency.Claim, error) {
	if err := req.Validate(); err != nil {
		return idempotency.Claim{}, err
	}
	if err := checkOwner(req.Owner); err != nil {
		return idempotency.Claim{}, err
	}
	// Times are taken before the request: the lease the server enforces
	// (the key's TTL) starts later, so LeaseUntil never overstates it.
	now := time.UnixMilli(time.Now().UnixMilli())
	leaseUntil := now.Add(req.Lease).Truncate(time.Millisecond)
	rec := make([]byte, 0, 128+len(req.Owner)+len(req.InvocationID)+len(req.Agent)+len(req.Tool)+len(req.ArgsHash))
	rec = append(rec, "in_progress\n"...)
	rec = append(rec, req.Owner...)
	rec = append(rec, "\n1\n"...)
	rec = strconv.AppendInt(rec, now.UnixMilli(), 10)
	rec = append(rec, '\n')
	rec = strconv.AppendInt(rec, leaseUntil.UnixMilli(), 10)
	rec = append(rec, '\n')
	rec, err := appendMeta(rec, meta{Invocation: req.InvocationID, Agent: req.Agent, Tool: req.Tool, ArgsHash: req.ArgsHash})
	if err != nil {
		return idempotency.Claim{}, err
	}
	rkey, ikey := s.recordKey(req.Key), s.indexKey(req.InvocationID)
	ttl := req.Lease + s.cfg.LeaseMargin
	indexTTL := s.indexTTL(req.Lease)
	// The fast path: one pipelined round trip of plain commands (cheaper on
	// the server and the client than a script or MULTI/EXEC). First the
	// index: EXPIRE GT extends an existing index to at least indexTTL, SADD
	// adds the key (creating the index if it expired or never existed), and
	// EXPIRE NX gives a new index its TTL; in this order the index cannot
	// run out between them. A concurrent claim's EXPIRE NX may give a new
	// index its TTL first, computed from its own lease; that still covers
	// this record unless this lease exceeds half of IndexSlack (see
	// needsSecondExtend), and then EXPIRE GT runs once more (review
	// finding). Then SET NX GET claims the record or returns the one there:
	// that single command is the atomic claim. The index commands are
	// idempotent and come first, so the key is listed before its record
	// exists; a member whose claim did not happen is skipped by Effects.
	var set *redis.StatusCmd
	_, err = s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ExpireGT(ctx, ikey, indexTTL)
		p.SAdd(ctx, ikey, req.Key)
		p.ExpireNX(ctx, ikey, indexTTL)
		if needsSecondExtend(req.Lease) {
			p.ExpireGT(ctx, ikey, indexTTL)
		}
		set = p.SetArgs(ctx, rkey, rec, redis.SetArgs{Mode: "NX", TTL: ttl, Get: true})
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		if errors.Is(set.Err(), redis.Nil) {
			// The index failed (a key of the wrong type) but the SET NX
			// ran and claimed the key: give it back, so a caller told
			// "failed" does not hold it until the lease ends.
			_ = releaseScript.Run(context.WithoutCancel(ctx), s.c, []string{rkey}, req.Owner).Err()
		}
		return idempotency.Claim{}, storeErr("claim", err)
	}
	if errors.Is(set.Err(), redis.Nil) {
		// The key was new and holds the record we sent: build it here
		// instead of reading it back.
		return idempotency.Claim{Outcome: idempotency.OutcomeAcquired, Record: idempotency.Record{
			Key: req.Key, InvocationID: req.InvocationID, Agent: req.Agent, Tool: req.Tool,
			State: idempotency.StateInProgress, Owner: req.Owner, LeaseUntil: leaseUntil,
			ArgsHash: req.ArgsHash, Attempts: 1, CreatedAt: now,
		}}, nil
	}
	if !strings.HasPrefix(set.Val(), string(idempotency.StateInProgress)+"\n") {
		// Completed (the replay path): what is stored is the answer.
		found, err := parseRecord(req.Key, set.Val())
		if err != nil {
			return idempotency.Claim{}, storeErr("claim", err)
		}
		if found.State != idempotency.StateCompleted {
			return idempotency.Claim{}, storeErr("claim", fmt.Errorf("decode record: state %q", found.State))
		}
		return idempotency.Claim{Outcome: idempotency.OutcomeCompleted, Record: found}, nil
	}
	// In progress: whether its lease is live, and the takeover if it is
	// not, need the key's TTL and a conditional write: the script.
	res, err := claimScript.Run(ctx, s.c, []string{rkey},
		rec, millis(ttl), millis(s.cfg.LeaseMargin)).StringSlice()
	if err != nil {
		return idempotency.Claim{}, storeErr("claim", err)
	}
	if len(res) == 1 && res[0] == string(idempotency.OutcomeAcquired) {
		// The record expired between the two round trips.
		return idempotency.Claim{Outcome: idempotency.OutcomeAcquired, Record: idempotency.Record{
			Key: req.Key, InvocationID: req.InvocationID, Agent: req.Agent, Tool: req.Tool,
			State: idempotency.StateInProgress, Owner: req.Owner, LeaseUntil: leaseUntil,
			ArgsHash: req.ArgsHash, Attempts: 1, CreatedAt: now,
		}}, nil
	}
	if len(res) != 2 {
		return idempotency.Claim{}, storeErr("claim", fmt.Errorf("unexpected script reply %q", res))
	}
	found, err := parseRecord(req.Key, res[1])
	if err != nil {
		return idempotency.Claim{}, storeErr("claim", err)
	}
	return idempotency.Claim{Outcome: idempotency.Outcome(res[0]), Record: found}, nil
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
	if err := checkOwner(t.Owner); err != nil {
		return nil, err // it could match another record's header lines
	}
	cmd := script.Run(ctx, s.c, keys, args...)
	if err := cmd.Err(); err != nil {
		return nil, storeErr(op, err)
	}
	if str, ok := cmd.Val().(string); ok {
		if str != "ok" {
			return nil, storeErr(op, fmt.Errorf("unexpected script reply %q", str))
		}
		return []string{str}, nil
	}
	res, err := cmd.StringSlice()
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
	if lease <= 0 {
		return time.Time{}, fmt.Errorf("idempotency: renew %s: lease must be > 0", t.Key)
	}
	until := time.UnixMilli(time.Now().Add(lease).UnixMilli())
	res, err := s.runFenced(ctx, "renew", renewScript, t, []string{s.recordKey(t.Key), s.indexKey(t.InvocationID)},
		t.Owner, until.UnixMilli(), millis(lease+s.cfg.LeaseMargin), t.Key, millis(s.indexTTL(lease)))
	if err != nil {
		return time.Time{}, err
	}
	if err := fence(t.Key, res); err != nil {
		return time.Time{}, err
	}
	return until, nil
}

// Complete implements idempotency.Store. result must be valid JSON.
func (s *Store) Complete(ctx context.Context, t idempotency.Ticket, result json.RawMessage, retention time.Duration) error {
	if retention <= 0 {
		return fmt.Errorf("idempotency: complete %s: retention must be > 0", t.Key)
	}
	if !json.Valid(result) {
		return fmt.Errorf("idempotency: complete %s: result is not valid JSON", t.Key)
	}
	var res []string
	var err error
	if retention <= s.cfg.Retention {
		// The index outlives this record already (scripts.go).
		res, err = s.runFenced(ctx, "complete", completeScript, t, []string{s.recordKey(t.Key)},
			t.Owner, time.Now().UnixMilli(), []byte(result), millis(retention))
	} else {
		res, err = s.runFenced(ctx, "complete", completeExtendScript, t, []string{s.recordKey(t.Key), s.indexKey(t.InvocationID)},
			t.Owner, time.Now().UnixMilli(), []byte(result), millis(retention), t.Key, millis(retention+IndexSlack))
	}
	if err != nil {
		return err
	}
	if res[0] == "completed" {
		return nil // completed by this owner already: Complete is idempotent
	}
	return fence(t.Key, res)
}

// Release implements idempotency.Store.
func (s *Store) Release(ctx context.Context, t idempotency.Ticket) error {
	res, err := s.runFenced(ctx, "release", releaseScript, t, []string{s.recordKey(t.Key)}, t.Owner)
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
	for i, v := range vals {
		str, ok := v.(string)
		if !ok {
			continue // expired or released
		}
		rec, err := parseRecord(keys[i], str)
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

func msTime(field, s string) (time.Time, error) {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("decode record: %s %q: %w", field, s, err)
	}
	return time.UnixMilli(ms), nil
}

// parseRecord decodes the stored layout described in scripts.go.
func parseRecord(key, s string) (idempotency.Record, error) {
	f := strings.SplitN(s, "\n", 8)
	if len(f) != 6 && len(f) != 8 {
		return idempotency.Record{}, fmt.Errorf("decode record: %d lines, want 6 or 8", len(f))
	}
	r := idempotency.Record{Key: key, State: idempotency.State(f[0]), Owner: f[1]}
	switch {
	case r.State == idempotency.StateInProgress && len(f) == 6, r.State == idempotency.StateCompleted && len(f) == 8:
	default:
		return idempotency.Record{}, fmt.Errorf("decode record: state %q with %d lines", f[0], len(f))
	}
	var err error
	if r.Attempts, err = strconv.Atoi(f[2]); err != nil {
		return idempotency.Record{}, fmt.Errorf("decode record: attempts %q: %w", f[2], err)
	}
	if r.CreatedAt, err = msTime("created_at", f[3]); err != nil {
		return idempotency.Record{}, err
	}
	if r.LeaseUntil, err = msTime("lease_until", f[4]); err != nil {
		return idempotency.Record{}, err
	}
	var m meta
	if err := json.Unmarshal([]byte(f[5]), &m); err != nil {
		return idempotency.Record{}, fmt.Errorf("decode record: meta: %w", err)
	}
	r.InvocationID, r.Agent, r.Tool, r.ArgsHash = m.Invocation, m.Agent, m.Tool, m.ArgsHash
	if len(f) == 8 {
		if r.CompletedAt, err = msTime("completed_at", f[6]); err != nil {
			return idempotency.Record{}, err
		}
		r.Result = json.RawMessage(f[7])
	}
	return r, nil
}
