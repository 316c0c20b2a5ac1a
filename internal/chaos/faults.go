package chaos

import (
	"fmt"
	"slices"

	"github.com/agentfleet/agentfleet/pkg/providers/sim"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// faultEndings maps each simulated model fault class to the failure classes
// an invocation can END with because of it (the class of a dead_lettered
// or failed result, and of its DLQ entry). Found in review, nineteenth
// session: the checker took the class of a failed invocation from the
// worker under test, so a fleet that turned every simulated 503 into
// UNKNOWN passed with 0 completed. The classes come from the simulated
// provider (pkg/providers/sim, cross-checked against the taxonomy's
// classifiers by its TestTaxonomyFaults) and the taxonomy's policy table:
//
//   - rate_limited, server, timeout, transport: retried by the model
//     decorator, then degraded and dead-lettered under the same class
//     (auto-replayable: the replay completes them);
//   - quota: QUOTA_EXHAUSTED is never retried, escalated and dead-lettered
//     (auto-replayable after the quota resets);
//   - output_blocked (OUTPUT_BLOCKED: a refusal is substituted) and
//     truncated (TRUNCATED: flagged, left alone) end the invocation
//     completed, never dead-lettered;
//   - malformed_function_call: TOOL_PROTOCOL is only counted, and the model
//     is asked again within the call budget; a model that keeps breaking
//     the protocol spends the budget, so CALL_BUDGET is possible.
//
// The tool faults (Config.ToolFaults: the orders service answers
// "unavailable") end no invocation in failure: the tools answer the model
// an error map, the simulated model repeats a retryable call once and
// then answers in text, so the invocation completes (with or without its
// refund). Nor can they spend the call budget: the script makes at most
// five model calls (get_order and refund_order, each repeated once, and
// the answer), a degraded answer ends the run, and the budget
// (config.DefaultSupportMaxModelCalls, 12) counts calls, not the retry
// decorator's attempts. The faults never produce UNKNOWN, BAD_REQUEST,
// AUTH, NOT_FOUND or BAD_INPUT either: an invocation that ends with one of
// those was misclassified or broken by the fleet (including the run limit's
// UNKNOWN, "started 5 times without finishing": the harness's kills and
// restarts cut a run short a few times at most; an invocation cut short
// five times is a finding, not a fault the run injected).
var faultEndings = map[sim.FaultClass][]taxonomy.Class{
	sim.FaultRateLimited:           {taxonomy.RateLimited},
	sim.FaultQuota:                 {taxonomy.QuotaExhausted},
	sim.FaultServer:                {taxonomy.Server},
	sim.FaultTimeout:               {taxonomy.Timeout},
	sim.FaultTransport:             {taxonomy.Transport},
	sim.FaultOutputBlocked:         nil,
	sim.FaultTruncated:             nil,
	sim.FaultMalformedFunctionCall: {taxonomy.CallBudget},
}

// failureClasses returns the failure classes an invocation of a run with
// the given model fault spec (pkg/providers/sim's syntax) can end with;
// none for "none". Tool faults add none (see faultEndings).
func failureClasses(modelFaults string) (map[taxonomy.Class]bool, error) {
	f, err := sim.ParseFaults(modelFaults)
	if err != nil {
		return nil, fmt.Errorf("chaos: model faults: %w", err)
	}
	out := map[taxonomy.Class]bool{}
	for c, p := range f {
		if p <= 0 {
			continue
		}
		ends, ok := faultEndings[c]
		if !ok {
			return nil, fmt.Errorf("chaos: model fault %s: the checker does not know which classes it ends invocations with", c)
		}
		for _, e := range ends {
			out[e] = true
		}
	}
	return out, nil
}

// classNames returns the classes' names, sorted.
func classNames(cs map[taxonomy.Class]bool) []string {
	out := make([]string, 0, len(cs))
	for c := range cs {
		out = append(out, string(c))
	}
	slices.Sort(out)
	return out
}
