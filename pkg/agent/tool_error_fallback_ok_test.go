package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// Regression (found in review, eighteenth session): An on-tool-error callback's map "becomes the function response, as if
// the tool had returned it" (OnToolErrorCallback). A common use is a
// fallback: serve a cached copy when the service is down. runTool now
// passes every callback map through tool.SanitizeAll, success or not, so a
// fallback the callback marked as a success ({"status":"ok", ...}) is cut
// to the first line of each string, capped at 200 runes, its URLs
// redacted and any value of another Go type ([]map[string]any, the usual
// list of records) replaced by "[redacted]": the model answers the user
// from a mangled copy, where the same map returned by the tool itself
// reaches the model whole.
func TestOnToolErrorSuccessFallbackReachesTheModelAsTheToolWouldReturnIt(t *testing.T) {
	policy := "Refunds are accepted within 30 days of delivery.\nDamaged items are refunded in full: see https://help.example.com/returns/damaged"
	fallback := func() map[string]any {
		return tool.OK(map[string]any{
			"source": "cache",
			"policy": policy,
			"faq":    []map[string]any{{"q": "Can I return opened items?", "a": "Yes, within 30 days."}},
		})
	}
	for _, viaCallback := range []bool{false, true} {
		name := map[bool]string{false: "returned by the tool", true: "returned by an on-tool-error callback"}[viaCallback]
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, agenttest.Reply(agenttest.Call("refund_policy", nil)), agenttest.Reply(agenttest.Text("ok")))
			f.agent.Tools = append(f.agent.Tools, failingTool{name: "refund_policy", run: func(context.Context, map[string]any) (map[string]any, error) {
				if viaCallback {
					return nil, errors.New("policy service unavailable")
				}
				return fallback(), nil
			}})
			f.agent.Callbacks.OnToolError = []agent.OnToolErrorCallback{func(context.Context, *agent.CallbackContext, *agent.ToolCall, error) (map[string]any, error) {
				return fallback(), nil // the cached copy
			}}
			if _, err := f.run(t, "inv-1", "what is the refund policy?"); err != nil {
				t.Fatal(err)
			}
			reqs := f.model.Requests()
			if len(reqs) != 2 {
				t.Fatalf("model calls = %d, want 2", len(reqs))
			}
			var resp map[string]any
			for _, c := range reqs[1].Contents {
				for _, fr := range c.FunctionResponses() {
					resp = fr.Response
				}
			}
			if got, _ := resp["policy"].(string); got != policy {
				t.Errorf("the model got policy %q, want %q", got, policy)
			}
			if s := fmt.Sprint(resp["faq"]); !strings.Contains(s, "Can I return opened items?") {
				t.Errorf("the model got faq %s, want the fallback's list", s)
			}
		})
	}
}
