package replayer

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"

	"github.com/agentfleet/agentfleet/pkg/dlq"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

func replayFlags(fs *flag.FlagSet, o *cmdOpts) {
	o.filterFlags.register(fs)
	fs.IntVar(&o.max, "max", 0, "replay (or park) at most this many entries (0: all)")
	fs.Float64Var(&o.rate, "rate", 0, "replays per second (default replay.rate = 50; 0 = unthrottled)")
	fs.IntVar(&o.concurrency, "concurrency", 0, "replays in flight at once (default replay.concurrency = 8)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "print exactly what would be replayed, parked and skipped; change nothing")
	fs.BoolVar(&o.yes, "yes", false, "do not ask for confirmation above replay.confirm_above entries")
	fs.IntVar(&o.canary, "canary", 0, "replay N entries first, wait for their results, halt (exit 2) if any fails again")
	fs.BoolVar(&o.force, "force", false, "with --class: replay a class that is not auto-replayable (after you fixed the cause)")
	fs.BoolVar(&o.wait, "wait", false, "wait for each replay's result (up to replay.result_timeout) before exiting")
	fs.BoolVar(&o.parked, "parked", false, "replay entries of the parked stream (after you reviewed them): replay.max_replays does not park them again; a class that needs a person still needs --class and --force")
}

// flagSet reports whether the named flag was given.
func (c *cmdCtx) flagSet(name string) bool {
	set := false
	c.fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func runReplay(ctx context.Context, c *cmdCtx, pos []string) error {
	o := c.opts
	if len(pos) != 0 {
		return usagef("replay takes no arguments (filters are flags: --class, --agent, --invocation ...)")
	}
	if o.max < 0 || !(o.rate >= 0) || math.IsInf(o.rate, 1) || o.concurrency < 0 || o.canary < 0 { // NaN and +Inf rates too: they meant unthrottled
		return usagef("--max, --rate, --concurrency and --canary must not be negative (and --rate finite)")
	}
	filter, err := o.filter(c.env.Now())
	if err != nil {
		return err
	}
	sel := Selection{Filter: filter, Force: o.force, Max: o.max, MaxReplays: c.cfg.Replay.MaxReplays}
	if o.parked {
		// A person chose these: one more replay each, however many came
		// before (a replay that fails again goes back to the DLQ with the
		// next replay count, and from there to the parked stream again).
		sel.MaxReplays = math.MaxInt
	}
	// A class the taxonomy does not know is checked once the fleet is
	// open (Fleet.checkClass): a typo is a usage error, not a refusal.
	if err := checkSelection(sel); err != nil && (filter.Class == "" || taxonomy.Class(filter.Class).Valid()) {
		return err
	}
	rateV, conc := c.cfg.Replay.Rate, c.cfg.Replay.Concurrency
	if c.flagSet("rate") {
		rateV = o.rate
	}
	if c.flagSet("concurrency") {
		conc = o.concurrency
	}
	if conc < 1 {
		return usagef("--concurrency must be at least 1")
	}
	// A dry run checks the stores too (the real run would refuse other
	// stores), but one that cannot (Redis down, the worker consumer out of
	// reach) warns and prints the plan: the real run refuses (exit 1).
	check := requireStoresCheck
	if o.dryRun {
		check = tryStoresCheck
	}
	f, err := c.openFleetFor(ctx, !o.dryRun, check, filter.Class)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := checkSelection(sel); err != nil {
		return err
	}
	retErr := f.CheckRetention(ctx) // a refusal waits until a dry run printed its plan
	var refused *HaltError
	if retErr != nil && !errors.As(retErr, &refused) {
		return retErr
	}
	if sel.RecordsSince, err = f.recordsCutoff(ctx, c.env.Now()); err != nil {
		return err
	}
	src := f // where the entries come from, and are removed from once replayed
	if o.parked {
		ok, err := f.Parked.Exists(ctx)
		if err != nil {
			return err
		}
		if !ok {
			// Nothing to do: the output (--json included) is that of an
			// empty run.
			fmt.Fprintf(c.env.Stderr, "nothing is parked (no stream %s)\n", c.cfg.Replay.ParkedStream)
			if o.dryRun {
				return writePlan(c, nil, planTally{}) // an empty plan, as for an empty parked stream
			}
			NewSummary().Write(c.env.Stdout, o.asJSON)
			return nil
		}
		src = f.Parked.view(f)
	}
	// What the stream holds before the plan is read: a run confirmed at
	// its prompt compares it with what it holds once confirmed
	// (StalePlan). Not needed when no prompt can wait.
	var before streamMark
	var beforeErr error
	if !o.dryRun && !o.yes {
		before, beforeErr = markStream(ctx, src)
	}
	plan, err := Plan(ctx, src, sel)
	if err != nil {
		return err
	}
	n := tally(plan)
	if o.dryRun {
		if err := writePlan(c, plan, n); err != nil {
			return err
		}
		return retErr // the real run would refuse
	}
	if retErr != nil {
		return retErr
	}
	if n.replay+n.park == 0 {
		fmt.Fprintf(c.env.Stderr, "nothing to replay: %d entries selected (%d skipped, %d bad)\n", len(plan), n.skip, n.bad)
	} else if err := confirm(ctx, c.env, "replay", n.replay+n.park, c.cfg.Replay.ConfirmAbove, o.yes); err != nil {
		return err
	}
	// A plan confirmed at a prompt may be stale: another engineer may
	// have purged, parked or replayed its entries while it waited. One
	// look at the stream decides it for the whole plan: with nothing
	// removed since the plan was read, the plan is as fresh as its age
	// and its replays read no entry back (found in review of this
	// session's fix, twenty-fifth session: every prompted replay read each
	// entry back, the look-up that halved the bulk replay's speed).
	stale := false
	if n.replay+n.park > 0 && confirmAsks(n.replay+n.park, c.cfg.Replay.ConfirmAbove, o.yes) {
		after, err := markStream(ctx, src)
		stale = beforeErr != nil || err != nil || !after.nothingRemovedSince(before)
	}
	if n.park > 0 {
		if err := f.EnsureForWrites(ctx); err != nil {
			return err
		}
	}
	sum := NewSummary()
	err = Execute(ctx, src, plan, ExecOptions{
		Rate: rateV, Concurrency: conc, Canary: o.canary, Wait: o.wait,
		ResultTimeout: c.cfg.Replay.ResultTimeout, HaltRatio: c.cfg.Replay.HaltRatio, HaltMinResults: c.cfg.Replay.HaltMinResults,
		CooldownPoll: c.cfg.Replay.CooldownPoll, Progress: c.env.Stderr, Terminal: c.env.Terminal(c.env.Stderr),
		Summary: sum, Now: c.env.Now,
		StalePlan: stale,
	})
	sum.Write(c.env.Stdout, o.asJSON)
	return err
}

// streamMark is what a stream's info says of the entries it holds at one
// moment: its creation time, last sequence and message count.
type streamMark struct {
	created time.Time
	lastSeq uint64
	msgs    uint64
}

// markStream reads the streamMark of f's DLQ stream (the parked stream of
// a Parked view): one stream info request.
func markStream(ctx context.Context, f *Fleet) (streamMark, error) {
	s, err := f.JS.Stream(ctx, f.Streams.DLQStream)
	if err != nil {
		return streamMark{}, fmt.Errorf("stream %s: %w", f.Streams.DLQStream, err)
	}
	info := s.CachedInfo()
	return streamMark{created: info.Created, lastSeq: info.State.LastSeq, msgs: info.State.Msgs}, nil
}

// nothingRemovedSince reports whether no message the stream held at prev
// (read earlier) has left it by m: the same stream (not deleted and made
// again) holding exactly one more message per sequence used since. A
// message stored takes a new sequence, and each one removed (deleted,
// purged, expired) lowers the count without giving a sequence back, so
// any removal, by a replay, park or purge of another replayer or by the
// stream's limits, breaks the equality, whatever was added meanwhile.
func (m streamMark) nothingRemovedSince(prev streamMark) bool {
	return m.created.Equal(prev.created) && m.lastSeq >= prev.lastSeq && m.msgs == prev.msgs+(m.lastSeq-prev.lastSeq)
}

// planTally counts a plan's actions.
type planTally struct{ replay, park, skip, bad int }

func tally(plan []Planned) planTally {
	var t planTally
	for _, p := range plan {
		switch p.Action {
		case ActionReplay:
			t.replay++
		case ActionPark:
			t.park++
		case ActionSkip:
			t.skip++
		case ActionBad:
			t.bad++
		}
	}
	return t
}

// PlannedJSON is one line of replay --dry-run --json.
type PlannedJSON struct {
	// Seq is the entry's sequence; InvocationID, Class and Agent identify
	// it; Action is what would be done, MsgID the replay's Nats-Msg-Id and
	// Why the reason of a skip, park or bad entry.
	Seq          uint64 `json:"seq"`
	InvocationID string `json:"invocation_id"`    // InvocationID is the entry's invocation id.
	Class        string `json:"class"`            // Class is the entry's failure class.
	Agent        string `json:"agent"`            // Agent is the entry's agent.
	Action       Action `json:"action"`           // Action is what would be done.
	MsgID        string `json:"msg_id,omitempty"` // MsgID is the replay's Nats-Msg-Id.
	Why          string `json:"why,omitempty"`    // Why is the reason of a skip, park or bad entry.
}

func planJSON(plan []Planned) []PlannedJSON {
	out := make([]PlannedJSON, 0, len(plan))
	for _, p := range plan {
		j := PlannedJSON{Seq: p.Item.Seq, InvocationID: p.InvocationID(), Class: p.Class(), Action: p.Action, Why: p.Why}
		if e := p.Item.Entry; e != nil {
			j.Agent = e.Agent
			if p.Action == ActionReplay {
				j.MsgID = ItemReplayMsgID(p.Item)
			}
		} else {
			_, j.Agent = subjectTokens(p.Item.Subject)
		}
		out = append(out, j)
	}
	return out
}

// writePlan prints a dry run.
func writePlan(c *cmdCtx, plan []Planned, n planTally) error {
	if c.opts.asJSON {
		return writeJSON(c.env.Stdout, planJSON(plan))
	}
	writePlanTable(c.env.Stdout, plan)
	fmt.Fprintf(c.env.Stdout, "dry run: would replay %d, park %d, skip %d; %d bad entries; nothing was changed\n", n.replay, n.park, n.skip, n.bad)
	return nil
}

func writePlanTable(w io.Writer, plan []Planned) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tACTION\tCLASS\tAGENT\tINVOCATION\tMSG ID / WHY")
	for _, j := range planJSON(plan) {
		detail := j.MsgID
		if detail == "" {
			detail = j.Why
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", j.Seq, j.Action, j.Class, j.Agent, j.InvocationID, clip(detail, 120))
	}
	_ = tw.Flush()
}

// byFilter plans every entry f selects with one action (park, purge).
func byFilter(ctx context.Context, f *Fleet, filter dlq.Filter, action Action, why string, maxN int) ([]Planned, error) {
	var out []Planned
	id := filter.InvocationID
	filter.InvocationID = "" // matched on the entry itself (ofInvocation)
	for it, err := range f.Reader.List(ctx, filter) {
		if it == nil {
			return out, err
		}
		if id != "" && !ofInvocation(it, id) {
			continue
		}
		out = append(out, Planned{Item: it, Action: action, Why: why})
		if maxN > 0 && len(out) >= maxN {
			break
		}
	}
	return out, nil
}
