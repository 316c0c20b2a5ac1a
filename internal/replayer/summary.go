package replayer

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"sync"
	"text/tabwriter"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Counts are what a replay did with the entries of one class.
type Counts struct {
	// Replayed: republished (a new request stored).
	Replayed int `json:"replayed"`
	// Completed: a replay's result came back completed.
	Completed int `json:"completed"`
	// DeadLettered: a replay's result came back dead_lettered or failed
	// (the entry is back in the DLQ with the next replay count).
	DeadLettered int `json:"dead_lettered_again"`
	// NoResult: replayed, but no result arrived while the run watched.
	NoResult int `json:"no_result"`
	// Parked: moved to the parked stream.
	Parked int `json:"parked"`
	// Skipped: left in the DLQ (not auto-replayable, request unusable).
	Skipped int `json:"skipped"`
	// AlreadyReplayed: another replayer (or an earlier, interrupted run)
	// had published this replay; it was not published again.
	AlreadyReplayed int `json:"already_replayed"`
	// AlreadyCompleted: the invocation had completed before (its record or
	// result says so); the entry was removed without a replay.
	AlreadyCompleted int `json:"already_completed"`
	// AlreadyGone: the entry had left its stream before this run reached it
	// (another replayer replayed, parked or purged it after this run's plan
	// was read, e.g. while its confirmation prompt waited); nothing was
	// published or parked for it.
	AlreadyGone int `json:"already_gone"`
	// Bad: undecodable entries, reported and left in place.
	Bad int `json:"bad"`
	// Errors: a publish or delete failed.
	Errors int `json:"errors"`
}

func (c *Counts) add(o Counts) {
	c.Replayed += o.Replayed
	c.Completed += o.Completed
	c.DeadLettered += o.DeadLettered
	c.NoResult += o.NoResult
	c.Parked += o.Parked
	c.Skipped += o.Skipped
	c.AlreadyReplayed += o.AlreadyReplayed
	c.AlreadyCompleted += o.AlreadyCompleted
	c.AlreadyGone += o.AlreadyGone
	c.Bad += o.Bad
	c.Errors += o.Errors
}

// Summary counts a replay's outcomes by class. It is safe for concurrent
// use.
type Summary struct {
	mu      sync.Mutex
	byClass map[string]*Counts
}

// NewSummary returns an empty summary.
func NewSummary() *Summary { return &Summary{byClass: map[string]*Counts{}} }

func (s *Summary) update(class string, f func(c *Counts)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.byClass[class]
	if !ok {
		c = &Counts{}
		s.byClass[class] = c
	}
	f(c)
}

func (s *Summary) result(class string, st envelope.Status) {
	s.update(class, func(c *Counts) {
		if st == envelope.StatusCompleted {
			c.Completed++
		} else {
			c.DeadLettered++
		}
	})
}

// ByClass returns a copy of the counts by class.
func (s *Summary) ByClass() map[string]Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]Counts, len(s.byClass))
	for k, v := range s.byClass {
		out[k] = *v
	}
	return out
}

// Total returns the counts over every class.
func (s *Summary) Total() Counts {
	var t Counts
	for _, c := range s.ByClass() {
		t.add(c)
	}
	return t
}

// Write prints the summary table (or JSON).
func (s *Summary) Write(w io.Writer, asJSON bool) {
	by := s.ByClass()
	if asJSON {
		b, _ := json.MarshalIndent(map[string]any{"by_class": by, "total": s.Total()}, "", "  ")
		fmt.Fprintln(w, string(b))
		return
	}
	classes := make([]string, 0, len(by))
	for k := range by {
		classes = append(classes, k)
	}
	sort.Strings(classes)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "CLASS\tREPLAYED\tCOMPLETED\tDEAD-LETTERED AGAIN\tNO RESULT\tPARKED\tSKIPPED\tALREADY REPLAYED\tALREADY COMPLETED\tALREADY GONE\tBAD\tERRORS\t")
	row := func(name string, c Counts) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", name, c.Replayed, c.Completed, c.DeadLettered,
			c.NoResult, c.Parked, c.Skipped, c.AlreadyReplayed, c.AlreadyCompleted, c.AlreadyGone, c.Bad, c.Errors)
	}
	for _, k := range classes {
		row(k, by[k])
	}
	row("total", s.Total())
	_ = tw.Flush()
}
