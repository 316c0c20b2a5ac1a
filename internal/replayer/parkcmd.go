package replayer

import (
	"context"
	"flag"
	"fmt"
)

func parkFlags(fs *flag.FlagSet, o *cmdOpts) {
	o.filterFlags.register(fs)
	fs.IntVar(&o.max, "max", 0, "park at most this many entries (0: all)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "print what would be parked; change nothing")
	fs.BoolVar(&o.yes, "yes", false, "do not ask for confirmation above replay.confirm_above entries")
}

// runPark moves the selected entries (any class, bad entries too) to the
// parked stream, with their history.
func runPark(ctx context.Context, c *cmdCtx, pos []string) error {
	if len(pos) != 0 {
		return usagef("park takes no arguments (use --invocation ID)")
	}
	if c.opts.max < 0 {
		return usagef("--max must not be negative")
	}
	filter, err := c.opts.filter(c.env.Now())
	if err != nil {
		return err
	}
	if filter == (filterZero) {
		return usagef("park needs a filter (--class, --agent, --since, --until or --invocation)")
	}
	f, err := OpenFleet(ctx, c.cfg, false, c.log)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.checkClass(ctx, filter.Class); err != nil {
		return err
	}
	why := "parked by hand (dlq-replayer park)"
	if c.opts.dryRun {
		why = "would be parked by hand" // nothing is parked: the table must not say otherwise
	}
	plan, err := byFilter(ctx, f, filter, ActionPark, why, c.opts.max)
	if err != nil {
		return err
	}
	if c.opts.dryRun {
		if c.opts.asJSON {
			return writeJSON(c.env.Stdout, planJSON(plan))
		}
		writePlanTable(c.env.Stdout, plan)
		fmt.Fprintf(c.env.Stdout, "dry run: would park %d entries; nothing was changed\n", len(plan))
		return nil
	}
	if err := confirm(ctx, c.env, "park", len(plan), c.cfg.Replay.ConfirmAbove, c.opts.yes); err != nil {
		return err
	}
	if err := f.EnsureForWrites(ctx); err != nil {
		return err
	}
	sum := NewSummary()
	err = Execute(ctx, f, plan, ExecOptions{Concurrency: 4, Progress: c.env.Stderr, Terminal: c.env.Terminal(c.env.Stderr), Summary: sum, Now: c.env.Now})
	sum.Write(c.env.Stdout, c.opts.asJSON)
	return err
}
