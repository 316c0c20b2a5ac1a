package replayer

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/agentfleet/agentfleet/pkg/dlq"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Action is what a replay does with one entry.
type Action string

// Actions of a plan.
const (
	// ActionReplay republishes the entry's request.
	ActionReplay Action = "replay"
	// ActionPark moves the entry to the parked stream (replayed too often).
	ActionPark Action = "park"
	// ActionSkip leaves the entry in the DLQ (not auto-replayable, or its
	// request cannot be replayed).
	ActionSkip Action = "skip"
	// ActionBad reports an entry that cannot be decoded; it stays in the
	// DLQ (park or purge it by hand).
	ActionBad Action = "bad"
)

// Planned is one entry and what will be done with it.
type Planned struct {
	// Item is the entry as read from the stream.
	Item *dlq.Item
	// Action is what will be done.
	Action Action
	// Why explains a skip, a park or a bad entry.
	Why string

	// at is when the walk read the entry: a replay of a plan younger than
	// half the requests' duplicate window needs no check that the entry is
	// still in the DLQ (exec.replay).
	at time.Time

	// chained says prev is exact: the walk saw every entry of the subject
	// stored before this one (no --since, --invocation or start sequence).
	chained bool
	// prev is the sequence of the previous entry on the same subject (0:
	// none before it in the stream). The remover only deletes runs of
	// entries whose links are all here, so a plan that was filtered after
	// Plan (drain drops skipped entries) is still safe.
	prev uint64
}

// Class returns the entry's class (the subject's token for a bad entry).
func (p Planned) Class() string {
	if p.Item.Entry != nil {
		return p.Item.Entry.Class
	}
	c, _ := subjectTokens(p.Item.Subject)
	return c
}

// InvocationID returns the entry's invocation id (itemInvocationID; "-"
// when a bad entry has none).
func (p Planned) InvocationID() string { return dash(itemInvocationID(p.Item)) }

// itemInvocationID returns the invocation id of it: the entry's own, or,
// for an entry that cannot be decoded, its Agent-Invocation-Id header ("" if
// it has none). list, show, purge and the dry run's table print the same.
func itemInvocationID(it *dlq.Item) string {
	if it.Entry != nil {
		return it.Entry.InvocationID
	}
	return it.Header.Get(dlq.HeaderInvocationID)
}

// handledByItself reports whether a replay or a drain pass handles the
// planned entry by itself: replays it, or parks it once replayed
// replay.max_replays times. Whatever else it plans (a class that needs a
// person, a first failure before the idempotency records' retention, a
// request that cannot be replayed, a bad entry) waits for a person. drain's
// entries gauge (replayable="true") and the "replayable" of stats, list and
// show (entryReplayable) are this.
func (p Planned) handledByItself() bool { return p.Action == ActionReplay || p.Action == ActionPark }

// entryReplayable reports whether a replay or drain of sel handles it by
// itself (decide, then handledByItself) and, when not, why.
func entryReplayable(it *dlq.Item, sel Selection) (ok bool, why string) {
	p := decide(it, sel)
	if p.handledByItself() {
		return true, ""
	}
	return false, p.Why
}

// ofInvocation reports whether it is an entry of invocation id: by the
// entry's own invocation id (the one a replay republishes), and only for an
// entry that cannot be decoded by its Agent-Invocation-Id header (an entry
// may lack the header, or carry another one).
func ofInvocation(it *dlq.Item, id string) bool {
	if it.Entry != nil {
		return it.Entry.InvocationID == id
	}
	return it.Header.Get(dlq.HeaderInvocationID) == id
}

// Selection says which entries a replay takes.
type Selection struct {
	// Filter selects entries.
	Filter dlq.Filter
	// Force allows the class named in Filter.Class even when the taxonomy
	// says it is not auto-replayable.
	Force bool
	// Max bounds the number of entries replayed or parked (0: all).
	Max int
	// MaxReplays parks entries already replayed this many times.
	MaxReplays int
	// UpToSeq ignores entries stored after this sequence (0: the stream's
	// last sequence when the walk starts), so entries that fail again
	// during the run are not replayed again by it.
	UpToSeq uint64
	// RecordsSince skips entries whose first failure is before it: their
	// idempotency records may have expired, and a replay could repeat the
	// effects they guarded (zero: no limit). The DLQ's max age keeps an
	// entry inside the records' retention (CheckRetention), but not the
	// invocation: first_failed_at is carried across replays, and a parked
	// entry outlives the DLQ's max age. recordsSince computes it.
	RecordsSince time.Time
}

// recordsSince is the RecordsSince of a plan made at now when the
// idempotency records live retention (0: for ever): the first run's
// records were written before its first failure and are not refreshed
// by later claims, so an entry first failed before now − (retention −
// RetentionSlack) may have outlived them.
func recordsSince(now time.Time, retention time.Duration) time.Time {
	if retention <= 0 {
		return time.Time{}
	}
	return now.Add(-(retention - idempotency.RetentionSlack))
}

// recordsCutoff is the RecordsSince of a plan made at now on f: from the
// idempotency records' retention (Fleet.recordRetention).
func (f *Fleet) recordsCutoff(ctx context.Context, now time.Time) (time.Time, error) {
	retention, _, err := f.recordRetention(ctx)
	if err != nil {
		return time.Time{}, err
	}
	return recordsSince(now, retention), nil
}

// autoSelection is the Selection of a replay without --class --force (or a
// drain pass) made at now: replay.max_replays, or none for the parked
// stream (replay --parked does not park again), and the idempotency
// records' retention (recordsCutoff). stats, list and show call an entry
// replayable by it (entryReplayable), so they agree with replay --dry-run
// and drain's entries gauge. The error is recordsCutoff's; the Selection
// is usable without the cutoff then.
func (f *Fleet) autoSelection(ctx context.Context, now time.Time, parked bool) (Selection, error) {
	sel := Selection{MaxReplays: f.Cfg.Replay.MaxReplays}
	if parked {
		sel.MaxReplays = math.MaxInt
	}
	var err error
	sel.RecordsSince, err = f.recordsCutoff(ctx, now)
	return sel, err
}

// RefusalReason says why a class needs a person, for the refusal message.
func RefusalReason(class string) string {
	c := taxonomy.Class(class)
	force := fmt.Sprintf("then replay with --class %s --force", class)
	switch c {
	case taxonomy.CallBudget:
		return "CALL_BUDGET entries need a person: the model looped; fix the prompt or tools first, " + force
	case taxonomy.BadInput:
		return "BAD_INPUT entries can never run as they are: the request is malformed or names no agent; fix the producer first (or purge them), " + force
	case taxonomy.Unknown:
		return "UNKNOWN entries need review: read the reason with `dlq-replayer show <invocation_id>` first, " + force
	case taxonomy.Auth, taxonomy.NotFound, taxonomy.BadRequest:
		return class + " entries need a configuration fix first (credentials, model name or request shape): fix it, " + force
	}
	return fmt.Sprintf("%s is not auto-replayable (%s): review first, %s", class, taxonomy.PolicyFor(c).Rule, force)
}

// AutoReplayable reports whether the taxonomy lets class be replayed
// without a person.
func AutoReplayable(class string) bool { return taxonomy.PolicyFor(taxonomy.Class(class)).AutoReplay }

// checkSelection refuses a named class that needs a person, unless forced.
func checkSelection(sel Selection) error {
	if sel.Force && sel.Filter.Class == "" {
		return usagef("--force needs --class: name the class you reviewed")
	}
	if c := sel.Filter.Class; c != "" && !AutoReplayable(c) && !sel.Force {
		return &HaltError{Rule: RuleRefusedClass, Reason: RefusalReason(c)}
	}
	return nil
}

// Plan walks the DLQ and decides, entry by entry, what a replay does. It
// changes nothing.
func Plan(ctx context.Context, f *Fleet, sel Selection) ([]Planned, error) {
	if err := checkSelection(sel); err != nil {
		return nil, err
	}
	upTo := sel.UpToSeq
	if upTo == 0 {
		s, err := f.JS.Stream(ctx, f.Streams.DLQStream)
		if err != nil {
			return nil, fmt.Errorf("DLQ stream: %w", err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			return nil, fmt.Errorf("DLQ stream: %w", err)
		}
		upTo = info.State.LastSeq
	}
	var out []Planned
	acted := 0
	if upTo == 0 {
		return nil, nil // an empty stream
	}
	chained := sel.Filter.Since.IsZero() && sel.Filter.InvocationID == "" && sel.Filter.FromSeq <= 1
	last := map[string]uint64{}
	for it, err := range f.walk(ctx, sel.Filter, upTo) {
		if it == nil {
			return out, err
		}
		p := decide(it, sel)
		p.chained, p.prev, p.at = chained, last[it.Subject], time.Now()
		last[it.Subject] = it.Seq
		if p.Action == ActionReplay || p.Action == ActionPark {
			if sel.Max > 0 && acted >= sel.Max {
				break
			}
			acted++
		}
		out = append(out, p)
	}
	return out, nil
}

// decide is the rule for one entry.
func decide(it *dlq.Item, sel Selection) Planned {
	p := Planned{Item: it}
	e := it.Entry
	switch {
	case it.Err != nil:
		p.Action, p.Why = ActionBad, it.Err.Error()
	case !AutoReplayable(e.Class) && !(sel.Force && e.Class == sel.Filter.Class):
		p.Action, p.Why = ActionSkip, "not auto-replayable: "+RefusalReason(e.Class)
	case !sel.RecordsSince.IsZero() && e.FirstFailedAt.Before(sel.RecordsSince):
		p.Action, p.Why = ActionSkip, fmt.Sprintf("first failed %s, before %s: its effects' idempotency records may have expired, so a replay could repeat them (check them with `dlq-replayer show`, then republish by hand if it is safe)",
			e.FirstFailedAt.UTC().Format(time.RFC3339), sel.RecordsSince.UTC().Format(time.RFC3339))
	case e.ReplayCount >= sel.MaxReplays:
		p.Action, p.Why = ActionPark, fmt.Sprintf("already replayed %d times (replay.max_replays %d)", e.ReplayCount, sel.MaxReplays)
	case e.RequestTruncated:
		p.Action, p.Why = ActionSkip, fmt.Sprintf("only a prefix of the %d-byte request was kept; it cannot be replayed", e.RequestSize)
	case len(e.OriginalRequest()) == 0:
		p.Action, p.Why = ActionSkip, "the entry holds no request"
	case e.Agent == dlq.UnknownAgent:
		p.Action, p.Why = ActionSkip, "the request names no valid agent"
	default:
		p.Action = ActionReplay
	}
	return p
}
