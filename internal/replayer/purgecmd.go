package replayer

import (
	"context"
	"flag"
	"fmt"

	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// filterZero is the filter that selects everything.
var filterZero = dlq.Filter{}

func purgeFlags(fs *flag.FlagSet, o *cmdOpts) {
	o.filterFlags.register(fs)
	fs.IntVar(&o.max, "max", 0, "purge at most this many entries (0: all)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "print what would be deleted; change nothing")
	fs.BoolVar(&o.yes, "yes", false, "delete without asking (required when stdin is not a terminal)")
	fs.BoolVar(&o.all, "all", false, "purge every entry (instead of a filter)")
	fs.BoolVar(&o.parked, "parked", false, "purge entries of the parked stream instead of the DLQ (bad entries too, which replay --parked cannot take)")
}

// runPurge deletes the selected entries, of the DLQ or (--parked) of the
// parked stream. It always asks for confirmation (or needs --yes): a
// purged entry's work is gone. With --parked it is the only way out of
// the parked stream for an entry that cannot be replayed (a bad entry, a
// request cut to fit), short of the stream's max age.
func runPurge(ctx context.Context, c *cmdCtx, pos []string) error {
	if len(pos) != 0 {
		return usagef("purge takes no arguments (use --invocation ID)")
	}
	if c.opts.max < 0 {
		return usagef("--max must not be negative")
	}
	filter, err := c.opts.filter(c.env.Now())
	if err != nil {
		return err
	}
	// Deleting for good needs the selection said out loud: "purge --yes"
	// alone (a half-typed command at 3 a.m.) would delete the whole DLQ,
	// replayable work included.
	switch {
	case filter == filterZero && !c.opts.all && !c.opts.dryRun: // a dry run of everything changes nothing
		return usagef("purge needs a filter (--class, --agent, --since, --until or --invocation), or --all to delete every entry")
	case filter != filterZero && c.opts.all:
		return usagef("--all selects every entry: give it without a filter")
	}
	f, err := OpenFleet(ctx, c.cfg, false, c.log)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.checkClass(ctx, filter.Class); err != nil {
		return err
	}
	why := "purged"
	if c.opts.dryRun {
		why = "would be purged" // nothing is deleted: the table must not say otherwise
	}
	src := f // where the entries are listed and deleted
	if c.opts.parked {
		ok, err := f.Parked.Exists(ctx)
		if err != nil {
			return err
		}
		if !ok {
			// Nothing parked: the output is that of an empty selection.
			fmt.Fprintf(c.env.Stderr, "nothing is parked (no stream %s)\n", c.cfg.Replay.ParkedStream)
			src = nil
		} else {
			src = f.Parked.view(f)
		}
	}
	var plan []Planned
	if src != nil {
		plan, err = byFilter(ctx, src, filter, "purge", why, c.opts.max)
	}
	if err != nil {
		return err
	}
	if c.opts.dryRun {
		if c.opts.asJSON {
			return writeJSON(c.env.Stdout, planJSON(plan))
		}
		writePlanTable(c.env.Stdout, plan)
		fmt.Fprintf(c.env.Stdout, "dry run: would delete %d entries; nothing was changed\n", len(plan))
		return nil
	}
	if len(plan) == 0 {
		if c.opts.asJSON {
			return writeJSON(c.env.Stdout, map[string]int{"purged": 0, "already_gone": 0})
		}
		fmt.Fprintln(c.env.Stdout, "purged 0 entries")
		return nil
	}
	if err := confirm(ctx, c.env, "permanently delete", len(plan), -1, c.opts.yes); err != nil {
		return err
	}
	deleted, gone := 0, 0
	var stopped error
	for i, p := range plan {
		if ctx.Err() != nil {
			stopped = purgeInterrupted(ctx.Err(), deleted, gone, len(plan)-i, src.Streams.DLQStream, "")
			break
		}
		err := src.Reader.Delete(ctx, p.Item.Seq)
		if err != nil {
			if ctx.Err() != nil {
				stopped = purgeInterrupted(err, deleted, gone, len(plan)-i, src.Streams.DLQStream, " (the one being deleted at the interrupt perhaps not)")
				break
			}
			if already, _ := src.Reader.Gone(ctx, p.Item.Seq); already {
				gone++
				continue
			}
			if ctx.Err() != nil { // the look-up was interrupted
				stopped = purgeInterrupted(err, deleted, gone, len(plan)-i, src.Streams.DLQStream, " (the one being deleted at the interrupt perhaps not)")
				break
			}
			return fmt.Errorf("after %d deleted: %w", deleted, err)
		}
		deleted++
	}
	// An interrupted purge prints what it deleted too, as an interrupted
	// replay prints its summary (found in review, twenty-fourth session:
	// purge --json printed nothing on stdout).
	if c.opts.asJSON {
		if err := writeJSON(c.env.Stdout, map[string]int{"purged": deleted, "already_gone": gone}); err != nil {
			return err
		}
		return stopped
	}
	fmt.Fprintf(c.env.Stdout, "purged %d entries (%d were already gone)\n", deleted, gone)
	return stopped
}

// purgeInterrupted is purge's error when ctx ended it: what it deleted and
// what stays in stream, not "context canceled" (left open in the
// twenty-third session).
func purgeInterrupted(cause error, deleted, gone, left int, stream, inFlight string) error {
	return &interruptedError{left: left, cause: cause, msg: fmt.Sprintf(
		"interrupted: %d entries deleted (%d were already gone); the other %d stay in %s%s",
		deleted, gone, left, stream, inFlight)}
}
