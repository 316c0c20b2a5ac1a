package replayer

import (
	"context"
	"fmt"
	"time"

	"github.com/agentfleet/agentfleet/pkg/idempotency"
	"github.com/agentfleet/agentfleet/pkg/idempotency/natskv"
)

// RuleRetention is the HaltError rule of a replay refused because the
// fleet's idempotency records do not outlive its dead letters
// (Fleet.CheckRetention).
const RuleRetention = "retention"

// CheckRetention reports, as a *HaltError with RuleRetention, a fleet whose
// idempotency records may expire before its dead letters do: a replay of an
// entry older than the records could then repeat the effects they guard.
// It checks against the DLQ stream's max age as the server has it (the
// workers set it), not only the one in the replayer's configuration, which
// config.Replayer.Validate already checked. The records' retention is, on
// NATS KV, the idempotency bucket's own max age (read as it is, also
// without Stores: --dry-run), and on Redis the replayer's
// idempotency.retention, which must mirror the workers' (each record gets
// the retention of the worker that completed it). A lookup that fails is a
// plain error.
func (f *Fleet) CheckRetention(ctx context.Context) error {
	retention, onKV, err := f.recordRetention(ctx)
	if err != nil {
		return err
	}
	if retention == 0 {
		return nil // the bucket keeps records until they are deleted
	}
	live, stream := f.dlqMaxAge, f.Streams.DLQStream
	if idempotency.ValidateRetention(retention, live) == nil {
		return nil
	}
	need := live + idempotency.RetentionSlack
	var reason string
	switch {
	case live <= 0:
		reason = fmt.Sprintf("the live DLQ stream %s keeps entries forever (max age 0, set by hand?), so no retention of idempotency records outlives them: "+
			"give it a max age by hand (nats stream edit %s --max-age 336h; workers never shorten it)", stream, stream)
	case onKV:
		reason = fmt.Sprintf("the NATS KV bucket %s keeps idempotency records %v, but the live DLQ stream %s keeps entries %v: a replay of an entry older than %v could repeat its effects. "+
			"Raise the workers' idempotency.retention to at least %v and restart one worker (workers only ever raise the bucket), or shorten the DLQ stream by hand (workers never shorten it)",
			natskv.DefaultBucket, retention, stream, live, retention-idempotency.RetentionSlack, need)
	default:
		reason = fmt.Sprintf("idempotency.retention %v (this replayer's setting, which must mirror the workers': on Redis each record gets its worker's retention) "+
			"is shorter than the live DLQ stream %s's max age %v + %v: set the workers' and this replayer's idempotency.retention to at least %v, or shorten the DLQ stream by hand (workers never shorten it)",
			retention, stream, live, idempotency.RetentionSlack, need)
	}
	return &HaltError{Rule: RuleRetention, Reason: reason}
}

// recordRetention returns the idempotency records' retention and whether it
// is a NATS KV bucket's.
func (f *Fleet) recordRetention(ctx context.Context) (time.Duration, bool, error) {
	if f.Stores != nil {
		return f.Stores.IdempotencyRetention, f.Stores.Mode == "nats-kv", nil
	}
	if f.Cfg.Redis.URL != "" {
		return f.Cfg.Idempotency.Retention, false, nil
	}
	s, err := natskv.New(ctx, f.JS, natskv.Config{OpenExisting: true})
	if err != nil {
		return 0, true, fmt.Errorf("idempotency records: %w (the workers create the NATS KV stores; a fleet on Redis needs redis.url here too)", err)
	}
	return s.Retention(), true, nil
}
