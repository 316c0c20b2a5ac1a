package taxonomy

// View is the dashboard view a class belongs to; each view goes to
// different people.
type View string

// The three views of the seed's "Operating it" section.
const (
	// ViewReliability is the provider's and the network's faults, shown as
	// a rate against total calls and tied to the availability objective.
	ViewReliability View = "reliability"
	// ViewCorrectness is our own faults: any non-zero value is a bug or a
	// misconfiguration.
	ViewCorrectness View = "correctness"
	// ViewPolicy is outcomes of content policy and limits, for product and
	// trust-and-safety owners.
	ViewPolicy View = "policy"
)

// Policy is the handling rule of one class: one row of the table. Every
// component reads its decision from here (the retry decorator reads
// Retryable, the on-model-error callback reads Degrade, the after-model
// callback reads Refuse and Flag, the worker reads DeadLetter, Page, Alert
// and AutoReplay).
type Policy struct {
	// Class is the class the row is for.
	Class Class
	// Retryable: the model decorator (package retry) may retry the call,
	// within its attempt limit, retry budget and deadline. No other layer
	// retries.
	Retryable bool
	// Degrade: once retries are spent, the on-model-error callback answers
	// with an honest degraded message instead of escalating the error.
	Degrade bool
	// Refuse: an in-band failure the after-model callback replaces with a
	// short refusal.
	Refuse bool
	// Flag: an in-band failure the after-model callback leaves alone but
	// flags in session state for the application to handle.
	Flag bool
	// Page: a page-level log line and metric; someone must act now.
	Page bool
	// Alert: any occurrence raises a (non-paging) alert, e.g. a suspected
	// loop. Page implies Alert.
	Alert bool
	// DeadLetter: the worker records the invocation in the DLQ.
	DeadLetter bool
	// AutoReplay: the replayer may republish the dead-lettered request
	// without a person deciding (after the outage or quota reset). Classes
	// that need a fix first (configuration, bugs, loops, unknowns) are
	// replayed only by hand.
	AutoReplay bool
	// View is the dashboard view the class is counted in.
	View View
	// CountsAgainstAvailability: the class counts as a failed call in the
	// availability objective. User- and policy-caused outcomes do not.
	CountsAgainstAvailability bool
	// Rule is the rule in words, for docs, dashboards and DLQ tooling.
	Rule string
}

// policyTable is the taxonomy's one rule per class (DESIGN.md, "Taxonomy:
// one rule per class" and "Outcome → action"). Order is the order of
// Classes and of dashboards.
var policyTable = []Policy{
	{
		Class: Transport, Retryable: true, Degrade: true, DeadLetter: true, AutoReplay: true,
		View: ViewReliability, CountsAgainstAvailability: true,
		Rule: "retry in the model decorator, then degrade and dead-letter; replay automatically",
	},
	{
		Class: Timeout, Retryable: true, Degrade: true, DeadLetter: true, AutoReplay: true,
		View: ViewReliability, CountsAgainstAvailability: true,
		Rule: "retry in the model decorator, then degrade and dead-letter; replay automatically",
	},
	{
		Class: RateLimited, Retryable: true, Degrade: true, DeadLetter: true, AutoReplay: true,
		View: ViewReliability, CountsAgainstAvailability: true,
		Rule: "retry in the model decorator (honouring server hints), then degrade and dead-letter; replay automatically",
	},
	{
		Class: QuotaExhausted, DeadLetter: true, AutoReplay: true,
		View: ViewReliability, CountsAgainstAvailability: true,
		Rule: "never retry; escalate and dead-letter; replay automatically after the quota resets",
	},
	{
		Class: Server, Retryable: true, Degrade: true, DeadLetter: true, AutoReplay: true,
		View: ViewReliability, CountsAgainstAvailability: true,
		Rule: "retry in the model decorator, then degrade and dead-letter; replay automatically",
	},
	{
		Class: BadRequest, Page: true, Alert: true, DeadLetter: true,
		View: ViewCorrectness, CountsAgainstAvailability: true,
		Rule: "never retry; escalate and page; dead-letter, replay by hand after the fix",
	},
	{
		Class: Auth, Page: true, Alert: true, DeadLetter: true,
		View: ViewCorrectness, CountsAgainstAvailability: true,
		Rule: "never retry; escalate and page; dead-letter, replay by hand after the fix",
	},
	{
		Class: NotFound, Page: true, Alert: true, DeadLetter: true,
		View: ViewCorrectness, CountsAgainstAvailability: true,
		Rule: "never retry; escalate and page; dead-letter, replay by hand after the fix",
	},
	{
		Class: PromptBlocked, Refuse: true, View: ViewPolicy,
		Rule: "substitute a refusal; policy view",
	},
	{
		Class: OutputBlocked, Refuse: true, View: ViewPolicy,
		Rule: "substitute a refusal; policy view",
	},
	{
		Class: Truncated, Flag: true, View: ViewPolicy,
		Rule: "leave the response alone and flag it; the application decides",
	},
	{
		Class: ToolProtocol, View: ViewPolicy,
		Rule: "count it; the model may correct itself within the call budget",
	},
	{
		Class: CallBudget, Alert: true, DeadLetter: true,
		View: ViewCorrectness, CountsAgainstAvailability: true,
		Rule: "escalate; loop-suspected alert; dead-letter for a person, never replayed automatically",
	},
	{
		Class: Unknown, DeadLetter: true,
		View: ViewReliability, CountsAgainstAvailability: true,
		Rule: "never retry; keep the raw message; dead-letter for review, never replayed automatically",
	},
	{
		Class: BadInput, DeadLetter: true,
		View: ViewCorrectness,
		Rule: "never retry; dead-letter and terminate the message; never replayed automatically",
	},
}

// Policies returns a copy of the policy table, one row per failure class.
func Policies() []Policy {
	return append([]Policy(nil), policyTable...)
}

// Lookup returns the row for c and whether c has one. Canceled and strings
// that name no class have none.
func Lookup(c Class) (Policy, bool) {
	for _, p := range policyTable {
		if p.Class == c {
			return p, true
		}
	}
	return Policy{}, false
}

// PolicyFor returns the row for c. For a value with no row it returns the
// UNKNOWN rules (never retried, dead-lettered for review) with Class set to
// c, so an unrecognised class is never handled more leniently than UNKNOWN;
// the one exception is Canceled, which is not a failure and gets a policy
// that does nothing (no retry, no degrade, no dead-letter, no view).
func PolicyFor(c Class) Policy {
	if p, ok := Lookup(c); ok {
		return p
	}
	if c == Canceled {
		return Policy{Class: Canceled, Rule: "not a failure: the cancelling party decides"}
	}
	p, _ := Lookup(Unknown)
	p.Class = c
	return p
}
