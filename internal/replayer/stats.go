package replayer

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// StatsRow is one class × agent of the DLQ.
type StatsRow struct {
	// Class and Agent identify the row; Count is its number of entries.
	Class string `json:"class"`
	Agent string `json:"agent"` // Agent is the row's agent.
	Count int    `json:"count"` // Count is the row's number of entries.
	// Replayable says whether a replay or drain handles every entry of the
	// row by itself (ListedEntry.Replayable); NeedPerson counts the entries
	// it leaves to a person (a class that needs one, a first failure before
	// the idempotency records' retention, a request that cannot be
	// replayed).
	Replayable bool `json:"replayable"`
	NeedPerson int  `json:"need_person"` // NeedPerson counts the row's entries that need a person.
	// Oldest and Newest are the earliest and latest failure times.
	Oldest time.Time `json:"oldest_failed_at"`
	Newest time.Time `json:"newest_failed_at"` // Newest is the latest failure time.
}

// Stats summarises the DLQ.
type Stats struct {
	// Rows are the class × agent counts, largest first.
	Rows []StatsRow `json:"rows"`
	// Total counts decodable entries; Replayable those a replay or drain
	// handles by itself (ListedEntry.Replayable: replay --dry-run's rule,
	// and drain's entries gauge's); NeedPerson the rest.
	Total      int `json:"total"`
	Replayable int `json:"replayable"`  // Replayable counts entries a replay or drain handles by itself.
	NeedPerson int `json:"need_person"` // NeedPerson counts entries that need a person.
	// Bad counts entries that cannot be decoded.
	Bad int `json:"bad"`
	// Parked counts the entries of the parked stream that the filter
	// selects (bad ones too): all of them without a filter.
	Parked uint64 `json:"parked"`
}

// CollectStats walks the DLQ (filtered) without changing it, and counts
// the parked entries the same filter selects. by (Fleet.autoSelection)
// says which entries a replay or drain handles by itself.
func CollectStats(ctx context.Context, f *Fleet, filter dlq.Filter, by Selection) (*Stats, error) {
	type key struct{ class, agent string }
	rows := map[key]*StatsRow{}
	// Rows is [] when the DLQ is empty, not null: scripts iterate it (jq
	// '.rows[]') and the empty DLQ is the usual case (found in review,
	// eighteenth session).
	st := &Stats{Rows: []StatsRow{}}
	for it, err := range f.Reader.List(ctx, filter) {
		if it == nil {
			return nil, err
		}
		if it.Err != nil {
			st.Bad++
			continue
		}
		e := it.Entry
		k := key{e.Class, e.Agent}
		r, ok := rows[k]
		if !ok {
			r = &StatsRow{Class: e.Class, Agent: e.Agent, Replayable: true, Oldest: e.FailedAt, Newest: e.FailedAt}
			rows[k] = r
		}
		r.Count++
		replayable, _ := entryReplayable(it, by)
		if e.FailedAt.Before(r.Oldest) {
			r.Oldest = e.FailedAt
		}
		if e.FailedAt.After(r.Newest) {
			r.Newest = e.FailedAt
		}
		st.Total++
		if replayable {
			st.Replayable++
		} else {
			st.NeedPerson++
			r.NeedPerson++
			r.Replayable = false
		}
	}
	for _, r := range rows {
		st.Rows = append(st.Rows, *r)
	}
	sort.Slice(st.Rows, func(i, j int) bool {
		a, b := st.Rows[i], st.Rows[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		if a.Class != b.Class {
			return a.Class < b.Class
		}
		return a.Agent < b.Agent
	})
	var err error
	if st.Parked, err = parkedCount(ctx, f, filter); err != nil {
		return nil, err
	}
	return st, nil
}

// parkedCount counts the parked entries filter selects: the stream's
// message count without a filter, a walk of the parked stream with one
// (found in review, twenty-second session: `stats --class SERVER` counted
// every parked entry, of any class and agent).
func parkedCount(ctx context.Context, f *Fleet, filter dlq.Filter) (uint64, error) {
	if filter == filterZero {
		return f.Parked.Count(ctx)
	}
	if ok, err := f.Parked.Exists(ctx); err != nil || !ok {
		if err != nil {
			err = fmt.Errorf("parked stream: %w", err)
		}
		return 0, err
	}
	var n uint64
	for it, err := range f.Parked.Reader().List(ctx, filter) {
		if it == nil {
			return 0, fmt.Errorf("parked stream: %w", err)
		}
		n++
	}
	return n, nil
}

// Write prints the stats table.
func (st *Stats) Write(w io.Writer, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLASS\tAGENT\tCOUNT\tREPLAYABLE\tOLDEST\tNEWEST")
	for _, r := range st.Rows {
		rep := "yes"
		switch {
		case r.NeedPerson == r.Count:
			rep = "no (needs a person)"
		case r.NeedPerson > 0:
			rep = fmt.Sprintf("%d (%d need a person)", r.Count-r.NeedPerson, r.NeedPerson)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s ago\t%s ago\n", r.Class, r.Agent, r.Count, rep, age(now, r.Oldest), age(now, r.Newest))
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "total %d: replayable %d, needs a person %d; bad entries %d; parked %d\n",
		st.Total, st.Replayable, st.NeedPerson, st.Bad, st.Parked)
}

// age formats now-t coarsely.
func age(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < 48*time.Hour:
		return d.Round(time.Minute).String()
	}
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}

func statsFlags(fs *flag.FlagSet, o *cmdOpts) {
	onceVar(fs, &o.class, "class", "only this failure `class`")
	onceVar(fs, &o.agent, "agent", "only this `agent`")
	onceVar(fs, &o.since, "since", "only entries stored at or after (RFC 3339 `time` or a duration ago)")
	onceVar(fs, &o.until, "until", "only entries stored before (RFC 3339 `time` or a duration ago)")
}

func runStats(ctx context.Context, c *cmdCtx, pos []string) error {
	if len(pos) != 0 {
		return usagef("stats takes no arguments")
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
	st, err := CollectStats(ctx, f, filter, c.replayableBy(ctx, f, false))
	if err != nil {
		return err
	}
	if c.opts.asJSON {
		return writeJSON(c.env.Stdout, st)
	}
	st.Write(c.env.Stdout, c.env.Now())
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
