package replayer

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// ListedEntry is one entry as list --json prints it.
type ListedEntry struct {
	// Seq, Subject and Stored locate the entry in its stream; Entry is the
	// decoded entry (nil for a bad one).
	Seq     uint64     `json:"seq"`
	Subject string     `json:"subject"`         // Subject is the entry's stream subject.
	Stored  time.Time  `json:"stored"`          // Stored is when the server stored the entry.
	Entry   *dlq.Entry `json:"entry,omitempty"` // Entry is the decoded entry, nil for a bad one.
	// InvocationID is the entry's invocation id; for an entry that cannot
	// be decoded, its Agent-Invocation-Id header's (the id show, purge
	// --invocation and park --invocation take), absent if it has none.
	InvocationID string `json:"invocation_id,omitempty"`
	// Error is set for an entry that cannot be decoded.
	Error string `json:"error,omitempty"`
	// Replayable says whether a replay or drain handles the entry by
	// itself (replays it, or parks it once replayed replay.max_replays
	// times): the rule of replay --dry-run and of drain's entries gauge. It
	// is false for a class that needs a person, an entry first failed
	// before the idempotency records' retention, a request that cannot be
	// replayed, and a bad entry. For a parked entry (list --parked, show's
	// parked entries), which nothing replays by itself, it says whether
	// replay --parked (without --class --force) would replay it: the
	// same rule without replay.max_replays.
	Replayable bool `json:"replayable"`
	// Why says why a decoded entry is not Replayable: what a replay's dry
	// run says of it.
	Why string `json:"why,omitempty"`
}

// listedEntry is it as list and show print it; sel (Fleet.autoSelection)
// says whether it is replayable.
func listedEntry(it *dlq.Item, sel Selection) ListedEntry {
	le := ListedEntry{Seq: it.Seq, Subject: it.Subject, Stored: it.Time, Entry: it.Entry, InvocationID: itemInvocationID(it)}
	if it.Err != nil {
		le.Error = it.Err.Error()
		return le
	}
	le.Replayable, le.Why = entryReplayable(it, sel)
	return le
}

// replayableBy returns the selection by which stats and list call an entry
// replayable (Fleet.autoSelection). When the idempotency records' retention
// cannot be read (the replay would fail too), it says so on stderr and the
// entries are judged without it.
func (c *cmdCtx) replayableBy(ctx context.Context, f *Fleet, parked bool) Selection {
	sel, err := f.autoSelection(ctx, c.env.Now(), parked)
	if err != nil {
		fmt.Fprintf(c.env.Stderr, "dlq-replayer: warning: %v; \"replayable\" leaves out the records' retention\n", err)
	}
	return sel
}

func listFlags(fs *flag.FlagSet, o *cmdOpts) {
	o.filterFlags.register(fs)
	fs.IntVar(&o.max, "max", 0, "list at most this many entries (0: all)")
	fs.BoolVar(&o.parked, "parked", false, "list the parked stream instead of the DLQ")
}

func runList(ctx context.Context, c *cmdCtx, pos []string) error {
	if len(pos) != 0 {
		return usagef("list takes no arguments (use --invocation ID or show ID)")
	}
	if c.opts.max < 0 {
		return usagef("--max must not be negative")
	}
	filter, err := c.opts.filter(c.env.Now())
	if err != nil {
		return err
	}
	f, err := OpenFleet(ctx, c.cfg, false, c.log)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.checkClass(ctx, filter.Class); err != nil {
		return err
	}
	r := f.Reader
	if c.opts.parked {
		ok, err := f.Parked.Exists(ctx)
		if err != nil {
			return err
		}
		if !ok {
			return listWrite(c, nil)
		}
		r = f.Parked.Reader()
	}
	sel := c.replayableBy(ctx, f, c.opts.parked)
	var out []ListedEntry
	id := filter.InvocationID
	filter.InvocationID = "" // matched on the entry itself (ofInvocation)
	for it, err := range r.List(ctx, filter) {
		if it == nil {
			return err
		}
		if id != "" && !ofInvocation(it, id) {
			continue
		}
		out = append(out, listedEntry(it, sel))
		if c.opts.max > 0 && len(out) >= c.opts.max {
			break
		}
	}
	return listWrite(c, out)
}

func listWrite(c *cmdCtx, out []ListedEntry) error {
	if c.opts.asJSON {
		if out == nil {
			out = []ListedEntry{}
		}
		return writeJSON(c.env.Stdout, out)
	}
	writeListTable(c.env.Stdout, out, c.env.Now())
	return nil
}

func writeListTable(w io.Writer, entries []ListedEntry, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tAGE\tCLASS\tAGENT\tINVOCATION\tREPLAYS\tMODEL\tTOOLS DONE\tREASON")
	bad := 0
	for _, le := range entries {
		if le.Entry == nil {
			bad++
			class, agent := subjectTokens(le.Subject)
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t-\t-\t-\tBAD ENTRY: %s\n", le.Seq, age(now, le.Stored), class, agent, dash(le.InvocationID), le.Error)
			continue
		}
		e := le.Entry
		tools := toolsCell(e, 60)
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", le.Seq, age(now, e.FailedAt), e.Class, e.Agent, e.InvocationID,
			e.ReplayCount, dash(e.Model), dash(tools), clip(e.Reason, 70))
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "%d entries (%d bad)\n", len(entries), bad)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// toolsCell is the TOOLS DONE cell of e: its tools completed, the most
// recent last, in at most about n bytes. A longer list keeps its end (the
// tools closest to the failure, which a bounded entry keeps too) and says
// how many earlier ones it leaves out.
func toolsCell(e *dlq.Entry, n int) string {
	names, omitted := e.ToolsCompleted, e.ToolsCompletedOmitted
	cell := strings.Join(names, ",")
	for len(names) > 1 && len(cell) > n {
		names, omitted = names[1:], omitted+1
		cell = strings.Join(names, ",")
	}
	if omitted > 0 {
		cell = fmt.Sprintf("+%d earlier,%s", omitted, cell)
	}
	return cell
}

// clip shortens s to fewer than n bytes and an ellipsis when it is longer
// than n, cutting between characters.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - 1
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut-- // never inside a character (found in review, twenty-first session)
	}
	return s[:cut] + "…"
}
