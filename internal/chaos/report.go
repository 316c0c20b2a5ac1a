package chaos

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// idList counts ids and keeps the first few as examples.
type idList struct {
	N        int
	Examples []string
}

func (l *idList) add(s string) {
	l.N++
	if len(l.Examples) < 5 {
		l.Examples = append(l.Examples, s)
	}
}

func (l idList) String() string {
	if l.N == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (e.g. %s)", l.N, strings.Join(l.Examples, ", "))
}

// Report is what a chaos run did and found.
type Report struct {
	// Config is the run's configuration (defaults applied).
	Config Config

	// Invocations is the number of requests the run meant to submit;
	// Submitted the number the server acknowledged.
	Invocations, Submitted int
	// Final counts the last result of each invocation by "status class".
	Final map[string]int

	// Chaos done. Kills counts the SIGKILLs sent (a scheduled kill that
	// finds its worker already exited by itself sends none).
	Kills, RedisRestarts, NATSRestarts int
	Events                             []Event // Events lists the chaos actions in order.

	// DLQ contents for this run's invocations before the replay (all
	// entries the chaos phase produced) and at the end. DLQForeign counts
	// the entries under ids the run never submitted, before the replay or
	// at the end (each stream sequence once).
	DLQEntries, DLQInvocations, DLQForeign int
	DLQByClass                             map[string]int // DLQByClass counts the entries before the replay by class.
	DLQAfterEntries, DLQAfterInvocations   int            // DLQAfterEntries and DLQAfterInvocations are the counts at the end.
	DLQAfterByClass                        map[string]int // DLQAfterByClass counts the entries at the end by class.

	// Replay.
	ReplayMode   string
	ReplayerExit int // ReplayerExit is dlq-replayer's exit code.
	ReplayWanted int // ReplayWanted is the number of invocations waiting for a replay.

	// Transient: invocations with an auto-replayable DLQ entry, and how many
	// of them completed.
	Transient, TransientCompleted int

	// FailureClasses are the failure classes the run's model faults can
	// end an invocation with (faultEndings); an invocation that did not
	// complete with any other is in Misclassified.
	FailureClasses []string

	// Effects: records in demo:refunds for this run and distinct
	// (invocation, order) pairs among them.
	Refunds, RefundPairs, ForeignRefunds int
	// RefundRepeats counts refunds asked for again under an idempotency
	// key the orders service had booked (support.RepeatsKey): repeats that
	// got past the idempotency wrapper and that the service's own key
	// check stopped. Not a violation (a worker killed between the booking
	// and the claim's completion must ask again: only the downstream key
	// can tell), but what the duplicate check owes to that second layer.
	RefundRepeats int
	// LiveResults is the number of results the live subscription saw.
	LiveResults int

	// Violations (each must be zero).
	NotSubmitted   idList
	Lost           idList // Lost are submitted invocations without a result.
	BadResults     idList // BadResults are invocations whose result could not be decoded.
	NotInDLQ       idList // NotInDLQ are dead-lettered or failed invocations missing from the DLQ.
	RecordMismatch idList // RecordMismatch are results that disagree with the invocation record.
	// Contradictions are invocations seen completed live and later
	// reported otherwise, live or by their last stored result.
	Contradictions idList
	// MisaddressedResults are invocations whose last stored result
	// carries another invocation's id: another request's answer, and none
	// of their own.
	MisaddressedResults idList
	// Duplicates are the run's invocations with more than one refund
	// record, whatever their orders (each request asks for one refund), and
	// (invocation, order) pairs under ids outside the run refunded more
	// than once.
	Duplicates idList
	// WrongOrderRefunds are refund records of the run's invocations on an
	// order their request did not name (requestOrder).
	WrongOrderRefunds idList
	// NoResultAtDeadline are the submitted requests without a result at
	// the results deadline (60 % of Config.Duration), even if the fleet
	// restarted without faults finished them later: a fleet stuck for as
	// long as the chaos lasts must not pass on the harness's own rescue.
	NoResultAtDeadline idList
	// Misclassified are invocations that did not complete whose result or
	// DLQ entry has a failure class the run's faults cannot produce
	// (FailureClasses).
	Misclassified idList
	// TwoEndings are completed invocations with a DLQ entry left at the
	// end: after a replay any entry, without one an entry of a class never
	// replayed automatically (see checkTwoEndings).
	TwoEndings            idList
	TransientNotCompleted idList // TransientNotCompleted are transient failures that never completed.
	BadDLQEntries         idList // BadDLQEntries are DLQ entries that could not be decoded.
	BadRefunds            idList // BadRefunds are refund records that could not be decoded.
	RetryableMismatch     idList // RetryableMismatch are DLQ entries whose Retryable flag disagrees with their class's policy.
	WorkerCrashes         idList // WorkerCrashes are worker processes that exited by themselves (not by the harness's signals).
	// ForeignResults are invocation ids the run never submitted with a
	// result on the run's own results stream.
	ForeignResults idList

	// Phase ends and total, since the chaos clock started.
	ResultsPhase, ReplayPhase, Elapsed time.Duration

	mu            sync.Mutex
	harnessErrors []string
	tracker       *tracker
	beforeReplay  map[string][]*dlq.Item
}

// Violations lists every broken invariant, empty when the run passed.
func (r *Report) Violations() []string {
	var out []string
	add := func(name string, l idList) {
		if l.N > 0 {
			out = append(out, name+": "+l.String())
		}
	}
	add("not submitted (the harness could not publish)", r.NotSubmitted)
	add("lost (no result)", r.Lost)
	add("undecodable result", r.BadResults)
	add("dead-lettered or failed without a DLQ entry", r.NotInDLQ)
	add("invocation record disagrees with the last result", r.RecordMismatch)
	add("completed, then reported otherwise", r.Contradictions)
	add("stored result carries another invocation's id", r.MisaddressedResults)
	add("no result at the results deadline", r.NoResultAtDeadline)
	add("duplicated effects (an invocation refunded more than once)", r.Duplicates)
	add("refund of an order the request did not name", r.WrongOrderRefunds)
	add(fmt.Sprintf("did not complete, with a failure class the run's faults cannot produce (they produce %s)", orNone(strings.Join(r.FailureClasses, ", "))), r.Misclassified)
	add("completed, yet its DLQ entry is left at the end (two endings)", r.TwoEndings)
	add("transient entry not completed after the replay", r.TransientNotCompleted)
	add("undecodable DLQ entry", r.BadDLQEntries)
	add("undecodable refund record", r.BadRefunds)
	add("DLQ entry's retryable flag disagrees with its class", r.RetryableMismatch)
	add("worker exited by itself", r.WorkerCrashes)
	add("results under an invocation id the run never submitted (the run's NATS is its own)", r.ForeignResults)
	if r.ForeignRefunds > 0 {
		out = append(out, fmt.Sprintf("refund records under an invocation id the run never submitted: %d (the run's Redis is its own)", r.ForeignRefunds))
	}
	if r.DLQForeign > 0 {
		out = append(out, fmt.Sprintf("DLQ entries under an invocation id the run never submitted: %d (the run's NATS is its own)", r.DLQForeign))
	}
	if r.ReplayMode == "dlq-replayer replay" && r.ReplayerExit != 0 {
		out = append(out, fmt.Sprintf("dlq-replayer exited with %d", r.ReplayerExit))
	}
	for _, e := range r.harnessErrors {
		out = append(out, "harness: "+e)
	}
	return out
}

// OK reports whether every invariant held.
func (r *Report) OK() bool { return len(r.Violations()) == 0 }

// Print writes the counts table and the verdict.
func (r *Report) Print(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "\nagentfleet chaos soak: %d invocations, %d worker processes × %d, SIMULATED model faults %q, tool faults %.0f%%\n",
		r.Invocations, c.Workers, c.Concurrency, c.ModelFaults, c.ToolFaults*100)
	fmt.Fprintf(w, "chaos: %d worker SIGKILLs (every %s), Redis restarted %d×, NATS restarted %d×; replay: %s\n",
		r.Kills, c.KillEvery, r.RedisRestarts, r.NATSRestarts, orNone(r.ReplayMode))
	fmt.Fprintf(w, "failure classes these faults can end an invocation with: %s\n", orNone(strings.Join(r.FailureClasses, ", ")))
	fmt.Fprintf(w, "time: results in by %s, replay done by %s, total %s (bound %s)\n\n",
		r.ResultsPhase.Round(time.Second), r.ReplayPhase.Round(time.Second), r.Elapsed.Round(time.Second), c.Duration)

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "final state (last result)\tclass\tcount")
	keys := sortedKeys(r.Final)
	for _, k := range keys {
		status, class, _ := strings.Cut(k, " ")
		fmt.Fprintf(tw, "%s\t%s\t%d\n", status, orDash(class), r.Final[k])
	}
	fmt.Fprintf(tw, "lost (no result)\t\t%d\n", r.Lost.N)
	fmt.Fprintf(tw, "total submitted\t\t%d\n", r.Submitted)
	_ = tw.Flush()

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DLQ entries by class\tbefore replay\tat the end")
	classes := map[string]int{}
	for k := range r.DLQByClass {
		classes[k]++
	}
	for k := range r.DLQAfterByClass {
		classes[k]++
	}
	for _, k := range sortedKeys(classes) {
		fmt.Fprintf(tw, "%s\t%d\t%d\n", k, r.DLQByClass[k], r.DLQAfterByClass[k])
	}
	fmt.Fprintf(tw, "total entries (invocations)\t%d (%d)\t%d (%d)\n", r.DLQEntries, r.DLQInvocations, r.DLQAfterEntries, r.DLQAfterInvocations)
	_ = tw.Flush()

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "invariant\tvalue\tverdict")
	row := func(name string, n int) { fmt.Fprintf(tw, "%s\t%d\t%s\n", name, n, verdict(n == 0)) }
	row("lost (no result)", r.Lost.N+r.NotSubmitted.N)
	row("without a result at the results deadline", r.NoResultAtDeadline.N)
	row("undecodable results", r.BadResults.N)
	row("dead-lettered/failed but not in the DLQ", r.NotInDLQ.N)
	row("result ≠ invocation record", r.RecordMismatch.N)
	row("completed, then reported otherwise (live or last stored)", r.Contradictions.N)
	row("stored result of another invocation", r.MisaddressedResults.N)
	row("duplicated effects (invocations refunded more than once)", r.Duplicates.N)
	row("refunds of an order the request did not name", r.WrongOrderRefunds.N)
	row("not completed, with a class the faults cannot produce", r.Misclassified.N)
	row("completed, with a DLQ entry left at the end", r.TwoEndings.N)
	if r.ReplayMode != "" {
		fmt.Fprintf(tw, "transient invocations completed after replay\t%d/%d\t%s\n", r.TransientCompleted, r.Transient,
			verdict(r.TransientNotCompleted.N == 0))
	} else {
		fmt.Fprintf(tw, "transient invocations (no replay)\t%d\t-\n", r.Transient)
	}
	fmt.Fprintf(tw, "refund records / distinct (invocation, order)\t%d / %d\t%s\n", r.Refunds, r.RefundPairs, verdict(r.Duplicates.N == 0))
	row("refund records under ids the run never submitted", r.ForeignRefunds)
	row("results under ids the run never submitted", r.ForeignResults.N)
	row("DLQ entries under ids the run never submitted", r.DLQForeign)
	row("DLQ entries whose retryable flag disagrees with their class", r.RetryableMismatch.N)
	row("workers that exited by themselves", r.WorkerCrashes.N)
	fmt.Fprintf(tw, "repeats past the idempotency wrapper, stopped by the orders service's key\t%d\t-\n", r.RefundRepeats)
	_ = tw.Flush()

	if len(r.Events) > 0 {
		fmt.Fprintln(w, "\nevents:")
		for _, e := range r.Events {
			fmt.Fprintf(w, "  %7.1fs  %s\n", e.At.Seconds(), e.What)
		}
	}
	v := r.Violations()
	if len(v) == 0 {
		fmt.Fprintln(w, "\nPASS: every invariant held")
		return
	}
	fmt.Fprintf(w, "\nFAIL: %d violation(s)\n", len(v))
	for _, s := range v {
		fmt.Fprintln(w, "  - "+s)
	}
}

// addEvent records an event (safe for concurrent use).
func (r *Report) addEvent(at time.Duration, what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Events = append(r.Events, Event{At: at, What: what})
}

// addWorkerCrash records a worker that exited by itself (progress runs
// beside the checker's own goroutine, hence the lock).
func (r *Report) addWorkerCrash(what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.WorkerCrashes.add(what)
}

// addHarnessError records something the harness failed to do.
func (r *Report) addHarnessError(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.harnessErrors = append(r.harnessErrors, s)
}

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
