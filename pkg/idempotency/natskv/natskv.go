// Package natskv is the NATS JetStream KV backend of idempotency.Store
// (github.com/nats-io/nats.go/jetstream). It works on NATS server 2.9: no
// per-message TTL, no multiple filter subjects, no ordered consumers.
//
// Layout: one bucket (Config.Bucket, history 1) whose MaxAge is the retention
// of completed records (2.9 has no per-key TTL, so the retention passed to
// Complete is not used: set Config.Retention to the wrapper's retention).
// Each key's value is the JSON of an idempotency.Record; lease times inside
// it come from the worker clock (keep leases much longer than clock skew).
// Keys are mapped with KVKey. An invocation's index is one more entry
// (IndexKey) holding the list of its keys. A key or invocation id whose KV
// key would exceed MaxKeyLen is refused before anything is sent (an error
// wrapping idempotency.ErrKeyTooLong, not a *StoreError): the server would
// close the connection.
//
// Atomicity comes from revisions: Create (create-if-absent) claims a new key,
// Update(key, value, lastRevision) takes over an expired lease, renews and
// completes, Delete with LastRevision releases; a revision conflict re-reads
// and re-decides. A claim of a completed or live key is one round trip (a
// direct get); a new claim is up to five (get, index get and write, create,
// index rewrite), the index being written before the record so that no
// record is ever missing from it, and rewritten after it so that it does not
// expire before the record (entries expire by the age of their last write).
package natskv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/kvbucket"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// Defaults for Config.
const (
	// DefaultBucket is the KV bucket name.
	DefaultBucket = "AGENT_IDEMPOTENCY"
	// DefaultOpTimeout bounds each store call.
	DefaultOpTimeout = 5 * time.Second
)

// maxConflicts bounds re-reads after revision conflicts in one call.
const maxConflicts = 64

const backend = "natskv"

// Config configures a Store.
type Config struct {
	// Bucket is the KV bucket; default DefaultBucket.
	Bucket string
	// Retention is the bucket's MaxAge: how long a record lives after its
	// last write; default idempotency.DefaultRetention. Check it with
	// idempotency.ValidateRetention. New never lowers the MaxAge of an
	// existing bucket: a bucket that keeps records longer (another
	// process's configuration) keeps them so, and Store.Retention says so.
	Retention time.Duration
	// OpenExisting opens the bucket as it is, for a process that does not
	// own it (dlq-replayer): New neither creates nor reconfigures it, a
	// missing bucket is an error, and Store.Retention is the bucket's.
	OpenExisting bool
	// Replicas of the bucket; default 1.
	Replicas int
	// Storage of the bucket; default file.
	Storage jetstream.StorageType
	// OpTimeout bounds each store call (also when ctx has a later
	// deadline); default DefaultOpTimeout.
	OpTimeout time.Duration
	// Now is the lease clock; default time.Now.
	Now func() time.Time
}

// Store is an idempotency.Store on a JetStream KV bucket. Safe for
// concurrent use.
type Store struct {
	kv  jetstream.KeyValue
	js  jetstream.JetStream // LeaderGet's
	cfg Config
}

var _ idempotency.Store = (*Store)(nil)

// New creates the bucket, or updates its configuration if it exists, and
// returns a Store on it. An existing bucket's MaxAge is raised to
// cfg.Retention, never lowered: a process with a shorter retention (a
// replayer on its defaults, an older worker) would otherwise drop records
// that still guard effects a replay can repeat. With cfg.OpenExisting the
// bucket is only opened. A server that cannot be reached, or a missing
// bucket with OpenExisting, is a *idempotency.StoreError.
func New(ctx context.Context, js jetstream.JetStream, cfg Config) (*Store, error) {
	if cfg.Bucket == "" {
		cfg.Bucket = DefaultBucket
	}
	if cfg.Retention <= 0 {
		cfg.Retention = idempotency.DefaultRetention
	}
	if cfg.OpTimeout <= 0 {
		cfg.OpTimeout = DefaultOpTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.OpTimeout)
	defer cancel()
	mode := kvbucket.KeepLonger
	if cfg.OpenExisting {
		mode = kvbucket.Existing
	}
	kv, ttl, err := kvbucket.Open(ctx, js, jetstream.KeyValueConfig{
		Bucket:      cfg.Bucket,
		Description: "agentfleet idempotency records (pkg/idempotency/natskv)",
		History:     1,
		TTL:         cfg.Retention,
		Replicas:    cfg.Replicas,
		Storage:     cfg.Storage,
	}, mode)
	if err != nil {
		return nil, storeErr("open", err)
	}
	// A claim is a revision check: refuse a server where that is not
	// exclusive on a replicated bucket (two owners would run the effect).
	if err := kvbucket.RequireRevisionChecks(ctx, js, cfg.Bucket); err != nil {
		return nil, fmt.Errorf("natskv: open: %w", err)
	}
	cfg.Retention = ttl
	return &Store{kv: kv, js: js, cfg: cfg}, nil
}

// Retention returns the bucket's MaxAge, the retention of every record (0:
// records are kept until deleted), as New found or set it.
func (s *Store) Retention() time.Duration { return s.cfg.Retention }

func storeErr(op string, err error) error {
	return &idempotency.StoreError{Backend: backend, Op: op, Err: err}
}

// entry is a decoded record with its revision.
type entry struct {
	rec idempotency.Record
	rev uint64
}

// get returns the key's record, nil when absent.
func (s *Store) get(ctx context.Context, op, kvKey string) (*entry, error) {
	e, err := s.kv.Get(ctx, kvKey)
	return decodeEntry(op, kvKey, e, err)
}

// getFromLeader is get through the bucket stream's leader, confirmed
// (kvbucket.LeaderConfirm) while the record is missing or another owner's:
// never the answer of a replica that lags.
func (s *Store) getFromLeader(ctx context.Context, op, kvKey, owner string) (*entry, error) {
	e, err := kvbucket.LeaderConfirm(ctx, s.js, s.cfg.Bucket, kvKey, func(e jetstream.KeyValueEntry, err error) bool {
		cur, err := decodeEntry(op, kvKey, e, err)
		return err == nil && (cur == nil || cur.rec.Owner != owner)
	})
	return decodeEntry(op, kvKey, e, err)
}

// decodeEntry decodes a read of kvKey's entry: nil when absent.
func decodeEntry(op, kvKey string, e jetstream.KeyValueEntry, err error) (*entry, error) {
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, storeErr(op, err)
	}
	var rec idempotency.Record
	if err := json.Unmarshal(e.Value(), &rec); err != nil {
		return nil, storeErr(op, fmt.Errorf("decode %s: %w", kvKey, err))
	}
	return &entry{rec: rec, rev: e.Revision()}, nil
}

func encode(rec idempotency.Record) ([]byte, error) {
	b, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("idempotency: encode record %s: %w", rec.Key, err)
	}
	return b, nil
}

// Claim implements idempotency.Store.
func (s *Store) Claim(ctx context.Context, req idempotency.ClaimRequest) (idempotency.Claim, error) {
	if err := req.Validate(); err != nil {
		return idempotency.Claim{}, err
	}
	kvKey, err := boundedKVKey("claim", req.Key)
	if err != nil {
		return idempotency.Claim{}, err
	}
	ik, err := boundedIndexKey("claim", req.InvocationID)
	if err != nil {
		return idempotency.Claim{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.OpTimeout)
	defer cancel()
	var index indexWrite
	conflicted := false
	for range maxConflicts {
		// After a conflict the record is read through the leader: a
		// replica that has not applied the winning write would answer
		// "absent" (or the old record) on every try (found in review of
		// this session's index fix, twenty-fifth session).
		var cur *entry
		if conflicted {
			e, gerr := kvbucket.LeaderGet(ctx, s.js, s.cfg.Bucket, kvKey)
			cur, err = decodeEntry("claim", kvKey, e, gerr)
		} else {
			cur, err = s.get(ctx, "claim", kvKey)
		}
		conflicted = true // every path that goes round again is a conflict
		if err != nil {
			return idempotency.Claim{}, err
		}
		now := s.cfg.Now()
		switch {
		case cur != nil && cur.rec.State == idempotency.StateCompleted:
			return idempotency.Claim{Outcome: idempotency.OutcomeCompleted, Record: cur.rec}, nil
		case cur != nil && now.Before(cur.rec.LeaseUntil):
			return idempotency.Claim{Outcome: idempotency.OutcomeInProgress, Record: cur.rec}, nil
		}
		if index.rev == 0 {
			// A key claimed again (released, or its lease ran out) may be
			// listed by an index entry written long ago: rewrite it, so the
			// index does not expire before the new record (Effects must
			// list every record).
			if index, err = s.updateIndex(ctx, "claim", ik, req.Key, true); err != nil {
				return idempotency.Claim{}, err
			}
		}
		rec := idempotency.Record{
			Key: req.Key, InvocationID: req.InvocationID, Agent: req.Agent, Tool: req.Tool,
			State: idempotency.StateInProgress, Owner: req.Owner, LeaseUntil: now.Add(req.Lease),
			ArgsHash: req.ArgsHash, Attempts: 1, CreatedAt: now,
		}
		outcome := idempotency.OutcomeAcquired
		if cur != nil {
			outcome = idempotency.OutcomeReclaimed
			rec.Attempts = cur.rec.Attempts + 1
			rec.CreatedAt = cur.rec.CreatedAt
		}
		val, err := encode(rec)
		if err != nil {
			return idempotency.Claim{}, err
		}
		if cur == nil {
			_, err = s.kv.Create(ctx, kvKey, val)
			if errors.Is(err, jetstream.ErrKeyExists) || kvbucket.IsRevisionRefusal(err) {
				continue // someone else created it: re-read
			}
		} else {
			_, err = s.kv.Update(ctx, kvKey, val, cur.rev)
			if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
				continue // someone else took it over or it completed: re-read
			}
		}
		if err != nil {
			return idempotency.Claim{}, storeErr("claim", err)
		}
		// The index was written before the record, so its MaxAge would end
		// that much before the record's: for that moment (or until the
		// server's next expiry pass) Effects would not list a record that
		// still answers claims. Rewrite it now, after the record. Best
		// effort, as in Complete: the claim is stored.
		s.retouchIndex(ctx, "claim", ik, req.Key, index)
		return idempotency.Claim{Outcome: outcome, Record: rec}, nil
	}
	return idempotency.Claim{}, storeErr("claim", fmt.Errorf("%s: too many revision conflicts", req.Key))
}

// indexValue is the value of an invocation's index entry.
type indexValue struct {
	// Keys are the invocation's idempotency keys.
	Keys []string `json:"keys"`
}

// indexWrite is an index entry as updateIndex wrote it: its value and
// revision (0 when it wrote nothing).
type indexWrite struct {
	val []byte
	rev uint64
}

// updateIndex adds key to the invocation's index entry ik
// (boundedIndexKey; revision-checked). With key already listed and touch
// set it rewrites the entry anyway, restarting its MaxAge so the index
// lives at least as long as its records. It returns what it wrote.
//
// After a conflict it reads the entry through the stream's leader
// (kvbucket.LeaderGet): a direct get on a replicated bucket may be answered
// by a replica that has not applied the winning write yet, and every try
// on such a stale read conflicts again (seen under load on a three-node
// cluster: concurrent claims of one invocation failed as "too many revision
// conflicts", a store error, instead of answering in progress).
func (s *Store) updateIndex(ctx context.Context, op, ik, key string, touch bool) (indexWrite, error) {
	conflicted := false
	for range maxConflicts {
		var e jetstream.KeyValueEntry
		var err error
		if conflicted {
			e, err = kvbucket.LeaderGet(ctx, s.js, s.cfg.Bucket, ik)
		} else {
			e, err = s.kv.Get(ctx, ik)
		}
		conflicted = true // every path that goes round again is a conflict
		var iv indexValue
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			b, _ := json.Marshal(indexValue{Keys: []string{key}})
			rev, err := s.kv.Create(ctx, ik, b)
			if errors.Is(err, jetstream.ErrKeyExists) || kvbucket.IsRevisionRefusal(err) {
				continue
			}
			if err != nil {
				return indexWrite{}, storeErr(op, fmt.Errorf("index %s: %w", ik, err))
			}
			return indexWrite{val: b, rev: rev}, nil
		case err != nil:
			return indexWrite{}, storeErr(op, fmt.Errorf("index %s: %w", ik, err))
		}
		if err := json.Unmarshal(e.Value(), &iv); err != nil {
			return indexWrite{}, storeErr(op, fmt.Errorf("decode index %s: %w", ik, err))
		}
		if slices.Contains(iv.Keys, key) && !touch {
			return indexWrite{}, nil
		}
		if !slices.Contains(iv.Keys, key) {
			iv.Keys = append(iv.Keys, key)
		}
		b, _ := json.Marshal(iv)
		rev, err := s.kv.Update(ctx, ik, b, e.Revision())
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			continue
		}
		if err != nil {
			return indexWrite{}, storeErr(op, fmt.Errorf("index %s: %w", ik, err))
		}
		return indexWrite{val: b, rev: rev}, nil
	}
	return indexWrite{}, storeErr(op, fmt.Errorf("index %s: too many revision conflicts", ik))
}

// retouchIndex rewrites the index entry ik updateIndex wrote as prev (one
// write, restarting its MaxAge); when another write came in between, it
// touches the entry as it now is. Best effort: errors are dropped.
func (s *Store) retouchIndex(ctx context.Context, op, ik, key string, prev indexWrite) {
	if prev.rev != 0 {
		_, err := s.kv.Update(ctx, ik, prev.val, prev.rev)
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return
		}
	}
	_, _ = s.updateIndex(ctx, op, ik, key, true)
}

// fenced runs fn on t's record when t owns it, re-reading after revision
// conflicts. fn returns the new value to write (nil: delete) or an error.
// A ticket whose key or invocation id is too long (boundedKVKey,
// boundedIndexKey) is refused before anything is sent: no claim can have
// stored it, and Renew and Complete write its index entry after the
// record.
func (s *Store) fenced(ctx context.Context, op string, t idempotency.Ticket, fn func(cur *entry) (*idempotency.Record, bool, error)) error {
	if err := t.Validate(); err != nil {
		return err
	}
	kvKey, err := boundedKVKey(op, t.Key)
	if err != nil {
		return err
	}
	if _, err := boundedIndexKey(op, t.InvocationID); err != nil {
		return err
	}
	for range maxConflicts {
		cur, err := s.get(ctx, op, kvKey)
		if err == nil && (cur == nil || cur.rec.Owner != t.Owner) {
			// A direct get may be answered by a replica that has not
			// applied the claim yet: an owner is told its claim is lost
			// only when the leader says so too (the wrapper takes that as
			// final, and the effect could run again after the lease).
			cur, err = s.getFromLeader(ctx, op, kvKey, t.Owner)
		}
		if err != nil {
			return err
		}
		if cur == nil {
			return fmt.Errorf("%w: %s", idempotency.ErrLeaseLost, t.Key)
		}
		if cur.rec.Owner != t.Owner {
			return fmt.Errorf("%w: %s is held by %s", idempotency.ErrNotOwner, t.Key, cur.rec.Owner)
		}
		next, write, err := fn(cur)
		if err != nil || !write {
			return err
		}
		if next == nil {
			err = s.kv.Delete(ctx, kvKey, jetstream.LastRevision(cur.rev))
		} else {
			var val []byte
			if val, err = encode(*next); err != nil {
				return err
			}
			_, err = s.kv.Update(ctx, kvKey, val, cur.rev)
		}
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			continue
		}
		if errors.Is(err, nats.ErrMaxPayload) {
			// Larger than the server takes in one message: no retry can
			// write it (not a *StoreError).
			return fmt.Errorf("%w: natskv %s %s: %w", idempotency.ErrResultTooLarge, op, t.Key, err)
		}
		if err != nil {
			return storeErr(op, err)
		}
		return nil
	}
	return storeErr(op, fmt.Errorf("%s: too many revision conflicts", t.Key))
}

// Renew implements idempotency.Store.
func (s *Store) Renew(ctx context.Context, t idempotency.Ticket, lease time.Duration) (time.Time, error) {
	if lease <= 0 {
		return time.Time{}, fmt.Errorf("idempotency: renew %s: lease must be > 0", t.Key)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.OpTimeout)
	defer cancel()
	var until time.Time
	err := s.fenced(ctx, "renew", t, func(cur *entry) (*idempotency.Record, bool, error) {
		if cur.rec.State != idempotency.StateInProgress {
			return nil, false, fmt.Errorf("%w: %s is already completed", idempotency.ErrNotOwner, t.Key)
		}
		rec := cur.rec
		until = s.cfg.Now().Add(lease)
		rec.LeaseUntil = until
		return &rec, true, nil
	})
	if err != nil {
		return time.Time{}, err
	}
	// The record's write restarted its MaxAge: restart the index entry's
	// too, so it does not expire before the record (as Claim and Complete
	// do). Best effort, like Complete's.
	_, _ = s.updateIndex(ctx, "renew", IndexKey(t.InvocationID), t.Key, true) // fenced checked its length
	return until, nil
}

// Complete implements idempotency.Store. retention is not used: records
// live for the bucket's MaxAge (Config.Retention) after this write.
func (s *Store) Complete(ctx context.Context, t idempotency.Ticket, result json.RawMessage, retention time.Duration) error {
	if retention <= 0 {
		return fmt.Errorf("idempotency: complete %s: retention must be > 0", t.Key)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.OpTimeout)
	defer cancel()
	wrote := false
	err := s.fenced(ctx, "complete", t, func(cur *entry) (*idempotency.Record, bool, error) {
		if cur.rec.State == idempotency.StateCompleted {
			return nil, false, nil
		}
		rec := cur.rec
		rec.State = idempotency.StateCompleted
		rec.Result = result
		rec.CompletedAt = s.cfg.Now()
		wrote = true
		return &rec, true, nil
	})
	if err != nil || !wrote {
		return err
	}
	// Restart the index entry's MaxAge so it outlives this record. Best
	// effort: the result is stored; an index write that fails here leaves the
	// entry as old as the claim.
	_, _ = s.updateIndex(ctx, "complete", IndexKey(t.InvocationID), t.Key, true) // fenced checked its length
	return nil
}

// Release implements idempotency.Store. The index keeps the key; Effects
// skips keys without a record.
func (s *Store) Release(ctx context.Context, t idempotency.Ticket) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.OpTimeout)
	defer cancel()
	return s.fenced(ctx, "release", t, func(cur *entry) (*idempotency.Record, bool, error) {
		if cur.rec.State != idempotency.StateInProgress {
			return nil, false, fmt.Errorf("%w: %s is completed and cannot be released", idempotency.ErrNotOwner, t.Key)
		}
		return nil, true, nil
	})
}

// Effects implements idempotency.Store: the index entry, then each record.
// An invocation id too long for an index key (an operator's typo, or
// anything but an id) is refused with an error wrapping
// idempotency.ErrKeyTooLong: no claim can have stored it.
func (s *Store) Effects(ctx context.Context, invocationID string) ([]idempotency.Record, error) {
	ik, err := boundedIndexKey("effects", invocationID)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.OpTimeout)
	defer cancel()
	e, err := s.kv.Get(ctx, ik)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, storeErr("effects", err)
	}
	var iv indexValue
	if err := json.Unmarshal(e.Value(), &iv); err != nil {
		return nil, storeErr("effects", fmt.Errorf("decode index: %w", err))
	}
	var out []idempotency.Record
	for _, k := range iv.Keys {
		kk, err := boundedKVKey("effects", k)
		if err != nil {
			// Claim stores no such key (an older version without the
			// bound may have): say so rather than leave it out.
			return nil, fmt.Errorf("index %s: %w", ik, err)
		}
		cur, err := s.get(ctx, "effects", kk)
		if err != nil {
			return nil, err
		}
		if cur != nil && cur.rec.InvocationID == invocationID {
			out = append(out, cur.rec)
		}
	}
	idempotency.SortRecords(out)
	return out, nil
}
