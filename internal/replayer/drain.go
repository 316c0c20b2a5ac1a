package replayer

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

func drainFlags(fs *flag.FlagSet, o *cmdOpts) {
	onceVar(fs, &o.class, "class", "only this (auto-replayable) `class`")
	onceVar(fs, &o.agent, "agent", "only this `agent`")
	fs.Float64Var(&o.rate, "rate", 0, "replays per second (default drain.rate = 10)")
	fs.IntVar(&o.concurrency, "concurrency", 0, "replays in flight at once (default drain.concurrency = 4)")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "", "address for /metrics, /healthz, /readyz (default metrics_addr = :9091; \"\" disables)")
}

// runDrain replays the auto-replayable classes until ctx ends: one pass
// over the DLQ every drain.interval, at drain.rate, skipping entries whose
// model is cooling down (the next pass takes them), waiting for each pass's
// results so the auto-halt rule applies (after a halt, and after a pass
// whose results all came back dead-lettered again, it waits
// drain.halt_backoff). Entries replayed too often are parked. Before each
// pass it checks again that its stores are the fleet's (storesWatch): a
// pass on other stores, or one whose check cannot be decided, replays
// nothing, and the drain goes on.
func runDrain(ctx context.Context, c *cmdCtx, pos []string) error {
	o := c.opts
	if len(pos) != 0 {
		return usagef("drain takes no arguments")
	}
	filter, err := o.filter(c.env.Now())
	if err != nil {
		return err
	}
	sel := Selection{Filter: filter, MaxReplays: c.cfg.Replay.MaxReplays}
	// A class the taxonomy does not know is checked once the fleet is
	// open (Fleet.checkClass): a typo is a usage error, not a refusal.
	if err := checkSelection(sel); err != nil && (filter.Class == "" || taxonomy.Class(filter.Class).Valid()) {
		return err
	}
	rateV, conc, addr := c.cfg.Drain.Rate, c.cfg.Drain.Concurrency, c.cfg.MetricsAddr
	if c.flagSet("rate") {
		rateV = o.rate
	}
	if c.flagSet("concurrency") {
		conc = o.concurrency
	}
	if c.flagSet("metrics-addr") {
		// The flag bypasses Validate, which checks metrics_addr: refused
		// here, up front (exit 3), not in net.Listen after connecting to
		// everything (exit 1; found in review, twentieth session).
		if err := config.CheckMetricsAddr(o.metricsAddr); err != nil {
			return usagef("--metrics-addr: %v", err)
		}
		addr = o.metricsAddr
	}
	if conc < 1 || !(rateV >= 0) || math.IsInf(rateV, 1) { // NaN and +Inf too: they meant unthrottled
		return usagef("--concurrency must be at least 1 and --rate a finite number, not negative")
	}
	f, err := c.openFleetFor(ctx, true, requireStoresCheck, filter.Class)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := checkSelection(sel); err != nil {
		return err
	}
	if err := f.CheckRetention(ctx); err != nil {
		return err
	}
	if err := f.EnsureForWrites(ctx); err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := NewMetrics(reg)
	m.Init()
	if addr != "" {
		bound, err := app.ServeHTTP(ctx, addr, reg, map[string]app.Check{
			"nats": func(context.Context) error {
				if !f.NC.IsConnected() {
					return errors.New("nats not connected")
				}
				return nil
			},
			"stores": f.Stores.Ping,
		}, c.log)
		if err != nil {
			return fmt.Errorf("metrics_addr %s: %w", addr, err)
		}
		fmt.Fprintf(c.env.Stderr, "dlq-replayer drain: serving /metrics, /healthz, /readyz on %s\n", bound)
	}
	c.log.Info().Float64("rate", rateV).Int("concurrency", conc).Str("class", filter.Class).Str("agent", filter.Agent).
		Msg("drain started: replaying auto-replayable classes once their model's cooldown closed")
	var stores storesWatch
	for ctx.Err() == nil {
		wait := c.cfg.Drain.Interval
		var counts Counts
		err := stores.recheck(ctx, c.log, f, m)
		if err == nil {
			counts, err = drainPass(ctx, c, f, sel, m, rateV, conc)
		}
		if ctx.Err() == nil && counts.DeadLettered > 0 && counts.Completed == 0 {
			// Every result of the pass came back dead-lettered again: the
			// cause is not fixed. A pass too small for the auto-halt
			// (halt_min_results), or a class no cooldown covers (a spent
			// QUOTA_EXHAUSTED), would otherwise be replayed every interval
			// until max_replays parks it within a minute. Also when the
			// pass had an error besides (one entry's publish or delete):
			// the results that came back still say the cause stands.
			c.log.Warn().Int("dead_lettered_again", counts.DeadLettered).Dur("backoff", c.cfg.Drain.HaltBackoff).
				Msg("no replay of this pass completed; backing off as after a halt")
			wait = c.cfg.Drain.HaltBackoff
		}
		if err != nil {
			var he *HaltError
			switch {
			case errors.As(err, &he):
				c.log.Warn().Str("rule", he.Rule).Str("reason", he.Reason).Dur("backoff", c.cfg.Drain.HaltBackoff).Msg("drain halted by a safety rule; backing off")
				wait = c.cfg.Drain.HaltBackoff
			case ctx.Err() != nil:
			case errors.Is(err, ErrOtherStores): // logged by recheck; the next pass checks again
			default:
				c.log.Error().Err(err).Msg("drain pass failed; trying again next pass")
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	c.log.Info().Msg("drain stopped")
	return nil
}

// storesWatch checks again, before each drain pass, that the drain's stores
// are still the ones the fleet's workers record (checkFleetStores: one
// consumer info, one GET). The start-up check alone let a drain that runs
// for days go on replaying after the fleet's workers moved to other stores
// (the README's "Switching stores"), its "already completed" check and
// cooldown gate reading stores no worker writes any more (found in review,
// nineteenth session).
type storesWatch struct {
	seen bool   // a pass checked before
	last string // what the last decided check found: "" the fleet's stores, else its warning or error
}

// recheck returns nil when the pass may replay. Other stores
// (ErrOtherStores) hold the pass: it replays nothing, MetricHalts counts
// rule RuleStores each such pass, and the log says so when it starts or the
// stores named change (the next passes check again, and say when the
// stores are the fleet's again). A check that cannot be decided
// (ErrStoresNotChecked) is returned for the loop to log as a failed pass:
// nothing is replayed without the check, as replay refuses to run without
// it. Warnings (no worker consumer, no stores recorded) are logged when they
// change and do not hold the pass.
func (w *storesWatch) recheck(ctx context.Context, log zerolog.Logger, f *Fleet, m *Metrics) error {
	warning, err := checkFleetStores(ctx, f)
	if errors.Is(err, ErrStoresNotChecked) {
		return err
	}
	state := warning
	if err != nil {
		state = err.Error()
	}
	// The first pass repeats the start-up check, whose warning is on
	// stderr already.
	changed, first := state != w.last, !w.seen
	w.seen, w.last = true, state
	switch {
	case err != nil:
		m.halt(RuleStores)
		if changed || first {
			log.Error().Err(err).Msg("replaying nothing: the fleet's workers now record other stores than this drain's; checking again at each pass")
		}
		return err
	case !changed || first:
	case warning != "":
		log.Warn().Str("stores", warning).Msg("stores check: cannot tell; replaying")
	default:
		log.Info().Msg("stores check: the fleet's workers record this drain's stores; replaying")
	}
	return nil
}

// drainPass plans and executes one pass and returns its counts.
func drainPass(ctx context.Context, c *cmdCtx, f *Fleet, sel Selection, m *Metrics, rateV float64, conc int) (Counts, error) {
	var err error
	if sel.RecordsSince, err = f.recordsCutoff(ctx, c.env.Now()); err != nil {
		return Counts{}, err
	}
	m.Passes.Inc()
	plan, err := Plan(ctx, f, sel)
	if err != nil {
		return Counts{}, err
	}
	m.Entries.Reset()
	var act []Planned
	for _, p := range plan {
		// replayable="true" only for what this drain will handle by itself
		// (replay, or park once replayed too often): an entry of an
		// auto-replayable class that it skips (too old for its effects'
		// idempotency records, a cut request, no agent) waits for a
		// person, and the waiting-for-a-person alert must count it (found
		// in review, seventeenth session).
		// stats, list and show count by the same rule (entryReplayable).
		rep := "false"
		if p.handledByItself() {
			rep = "true"
			act = append(act, p)
		}
		m.Entries.WithLabelValues(p.Class(), rep).Inc()
	}
	// A model with no entry left to replay has none held back: clear its
	// paused gauge, which no entry of this pass would (found in review,
	// eighteenth session).
	models := map[string]bool{}
	for _, p := range act {
		if p.Action == ActionReplay && p.Item.Entry != nil {
			models[p.Item.Entry.Model] = true
		}
	}
	m.unpauseAllBut(models)
	if len(act) == 0 {
		return Counts{}, nil
	}
	sum := NewSummary()
	err = Execute(ctx, f, act, ExecOptions{
		Rate: rateV, Concurrency: conc, Wait: true, SkipCooling: true,
		ResultTimeout: c.cfg.Replay.ResultTimeout, HaltRatio: c.cfg.Replay.HaltRatio, HaltMinResults: c.cfg.Replay.HaltMinResults,
		CooldownPoll: c.cfg.Replay.CooldownPoll, Summary: sum, Metrics: m, Now: c.env.Now,
	})
	t := sum.Total()
	ev, msg := c.log.Info(), "drain pass done"
	var ie *interruptedError
	if errors.As(err, &ie) {
		// What the stopped pass did, and what it left (not "context
		// canceled"; left open in the twenty-third session).
		ev, msg = ev.Int("not_handled", ie.left), "drain pass interrupted: the entries it did not handle stay in the DLQ"
	}
	ev.Int("replayed", t.Replayed).Int("completed", t.Completed).Int("dead_lettered_again", t.DeadLettered).
		Int("parked", t.Parked).Int("skipped", t.Skipped).Int("already_replayed", t.AlreadyReplayed).
		Int("already_completed", t.AlreadyCompleted).Int("already_gone", t.AlreadyGone).Int("errors", t.Errors).
		Msg(msg)
	return t, err
}
