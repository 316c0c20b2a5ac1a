package producercli

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// outcomeOrder orders the summary rows.
var outcomeOrder = map[Outcome]int{
	OutcomeCompleted: 0, OutcomeSkipped: 1, OutcomeDuplicateLine: 2, OutcomeFailed: 3,
	OutcomeDeadLettered: 4, OutcomeTimeout: 5, OutcomeHeld: 6, OutcomeInvalid: 7, OutcomeError: 8, OutcomeCanceled: 9,
}

// SummaryRow is one row of a batch summary.
type SummaryRow struct {
	// Outcome and Class identify the row ("" class: none).
	Outcome Outcome
	Class   string // Class is the row's error class ("" for none).
	// Count is the number of lines with that outcome and class.
	Count int
}

// Summarize counts the results by outcome and class, in a fixed order.
func Summarize(results []LineResult) []SummaryRow {
	type key struct {
		o Outcome
		c string
	}
	counts := map[key]int{}
	for _, r := range results {
		counts[key{r.Outcome, r.Class}]++
	}
	rows := make([]SummaryRow, 0, len(counts))
	for k, n := range counts {
		rows = append(rows, SummaryRow{Outcome: k.o, Class: k.c, Count: n})
	}
	sort.Slice(rows, func(i, j int) bool {
		if a, b := outcomeOrder[rows[i].Outcome], outcomeOrder[rows[j].Outcome]; a != b {
			return a < b
		}
		return rows[i].Class < rows[j].Class
	})
	return rows
}

// WriteSummary writes the summary table: outcome, class, count, and the
// number submitted. It is WriteSummaryWindow with the requests stream's
// duplicate window unknown.
func WriteSummary(w io.Writer, results []LineResult) {
	WriteSummaryWindow(w, results, 0)
}

// WriteSummaryWindow is WriteSummary for a requests stream whose duplicate
// window is dupWindow: the advice to wait a dropped resend out names it
// (0: unknown, and the advice names no duration).
func WriteSummaryWindow(w io.Writer, results []LineResult, dupWindow time.Duration) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "OUTCOME\tCLASS\tCOUNT")
	submitted := 0
	for _, r := range results {
		if r.Submitted {
			submitted++
		}
	}
	for _, row := range Summarize(results) {
		fmt.Fprintf(tw, "%s\t%s\t%d\n", row.Outcome, orDash(row.Class), row.Count)
	}
	fmt.Fprintf(tw, "total\t\t%d\n", len(results))
	fmt.Fprintf(tw, "submitted\t\t%d\n", submitted)
	_ = tw.Flush()
	earlier, window := 0, droppedInWindow(results)
	for _, r := range results {
		if r.Earlier && !r.Duplicate {
			earlier++
		}
	}
	if earlier > 0 {
		fmt.Fprintf(w, "%d line(s) had ended dead_lettered or failed before this run and were not sent again: "+
			"the worker does not rerun a finished invocation for a resubmission. Once the cause is fixed, "+
			"replay them from the DLQ (dlq-replayer replay --invocation <id>, or by class; see docs/runbook.md).\n", earlier)
	}
	if held := countOutcome(results, OutcomeHeld); held > 0 {
		fmt.Fprintf(w, "%d line(s) were held, not sent: an earlier line of their session has no result (timeout, error, "+
			"canceled or invalid), and a conversation's turns run in file order. Run the batch again once that line's "+
			"cause is dealt with: completed lines are skipped, the rest are sent in order.\n", held)
	}
	if window > 0 {
		wait := "the requests stream's duplicate window"
		if dupWindow > 0 {
			wait = "the window (" + shortDuration(dupWindow) + ")"
		}
		fmt.Fprintf(w, "%d line(s) refused as BAD_INPUT before were sent again, but the requests stream still held "+
			"the earlier request in its duplicate window and dropped them: run the batch again once %s "+
			"has passed.\n", window, wait)
	}
}

// countOutcome counts the lines whose outcome is o.
func countOutcome(results []LineResult, o Outcome) int {
	n := 0
	for _, r := range results {
		if r.Outcome == o {
			n++
		}
	}
	return n
}

// droppedInWindow counts the lines refused as BAD_INPUT before whose resend
// the requests stream dropped as a duplicate.
func droppedInWindow(results []LineResult) int {
	n := 0
	for _, r := range results {
		if r.Earlier && r.Duplicate {
			n++
		}
	}
	return n
}

// shortDuration is d without trailing zero units ("1h", "10m", "1h30m",
// "1m30s").
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// batchExitCode is ExitOK when every line completed or was skipped.
func batchExitCode(results []LineResult) int {
	code := ExitOK
	for _, r := range results {
		switch {
		case r.Outcome == OutcomeError:
			return ExitError
		case !r.Outcome.ok():
			code = ExitNotCompleted
		}
	}
	return code
}
