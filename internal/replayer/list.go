package replayer

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

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
	// Error is set for an entry that cannot be decoded.
	Error string `json:"error,omitempty"`
	// Replayable says whether the class is auto-replayable.
	Replayable bool `json:"replayable"`
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
		le := ListedEntry{Seq: it.Seq, Subject: it.Subject, Stored: it.Time, Entry: it.Entry}
		if it.Err != nil {
			le.Error = it.Err.Error()
		} else {
			le.Replayable = AutoReplayable(it.Entry.Class)
		}
		out = append(out, le)
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
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t-\t-\t-\t-\tBAD ENTRY: %s\n", le.Seq, age(now, le.Stored), class, agent, le.Error)
			continue
		}
		e := le.Entry
		tools := strings.Join(e.ToolsCompleted, ",")
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

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}
