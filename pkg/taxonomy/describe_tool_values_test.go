package taxonomy_test

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// DefaultDescribeTool's contract: "Each argument value is sanitised on its
// own, so a free-text value that looks like SQL or holds an address is
// redacted alone (left out when nothing of it is left) and the call is
// still named". Two ordinary values, neither of which looks like SQL on its
// own, must not blank the whole description: the assembled string is
// sanitised again as a whole, where "select ... from" spans the two values,
// and the user reads "[redacted] was completed".
func TestDescribeToolTwoOrdinaryValuesKeepTheCallNamed(t *testing.T) {
	ct := agent.CompletedTool{Name: "exchange_item", Args: map[string]any{
		"note":   "please select the blue one",
		"reason": "ordered the wrong colour from the website",
	}}
	for k, v := range ct.Args {
		if d := taxonomy.DefaultDescribeTool(agent.CompletedTool{Name: "exchange_item", Args: map[string]any{k: v}}); !strings.Contains(d, "exchange_item") {
			t.Fatalf("precondition: value %q alone blanks the description: %q", v, d)
		}
	}
	got := taxonomy.DefaultDescribeTool(ct)
	if !strings.Contains(got, "exchange_item") {
		t.Errorf("DefaultDescribeTool = %q; want the call named (the step exchange_item ...)", got)
	}
	msg := taxonomy.DefaultDegradedMessage([]agent.CompletedTool{ct}, taxonomy.DefaultDescribeTool)
	if strings.Contains(msg, "[redacted] was completed") {
		t.Errorf("degraded message tells the user %q", msg)
	}
}

// The cap drops whole arguments, never cuts one: what is said stays
// within MaxErrorStringLen and every argument shown is complete.
func TestDescribeToolCapDropsWholeArguments(t *testing.T) {
	long := strings.Repeat("x", 90)
	ct := agent.CompletedTool{Name: "refund_order", Args: map[string]any{"a": long, "b": long, "c": long}}
	got := taxonomy.DefaultDescribeTool(ct)
	want := "the step refund_order (a=" + long + ", …)"
	if got != want {
		t.Fatalf("DefaultDescribeTool = %q, want %q", got, want)
	}
	if n := len([]rune(got)); n > 200 {
		t.Fatalf("description is %d runes, over the cap", n)
	}
}
