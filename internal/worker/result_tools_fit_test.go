package worker

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/dlq"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (left open in the twenty-third session, fixed in the
// twenty-fourth): fitResult could not shrink tools_run, so a result whose
// tool names alone did not fit the limit failed "does not fit even without
// its content and message" on every delivery and its message was put back
// for ever. Now tools_run keeps the most recent names within
// maxToolsRunSize (dlq.MaxToolsCompletedSize), whatever the limit, and
// below a limit that small the earliest names go too, counted in
// tools_run_omitted; the fit stays deterministic.
func TestFitResultBoundsToolsRun(t *testing.T) {
	names := make([]string, 5000)
	for i := range names {
		names[i] = fmt.Sprintf("tool_%04d", i)
	}
	orig := append([]string(nil), names...)
	for _, tc := range []struct {
		name  string
		limit int
	}{
		{"no limit known", 0},
		{"max_payload of 1 MiB", 1<<20 - resultHeadroom},
		{"a limit below the bound", 2000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := &envelope.Result{V: envelope.Version, InvocationID: "inv-1", Status: envelope.StatusCompleted,
				Content: "done", ToolsRun: names}
			err := fitResult(res, tc.limit)
			data, encErr := res.Encode()
			t.Logf("limit %d: err %v; %d bytes; %d names kept (last %q), %d omitted, content %q", tc.limit, err, len(data), len(res.ToolsRun), last(res.ToolsRun), res.ToolsRunOmitted, res.Content)
			if err != nil || encErr != nil {
				t.Fatalf("fitResult: %v (encode: %v)", err, encErr)
			}
			if tc.limit > 0 && len(data) > tc.limit {
				t.Fatalf("encoded %d bytes, limit %d", len(data), tc.limit)
			}
			list, _ := json.Marshal(res.ToolsRun)
			if len(list) > dlq.MaxToolsCompletedSize || len(res.ToolsRun) == 0 || last(res.ToolsRun) != "tool_4999" {
				t.Fatalf("kept %d names in %d bytes (last %q): want the most recent, within %d bytes", len(res.ToolsRun), len(list), last(res.ToolsRun), dlq.MaxToolsCompletedSize)
			}
			if len(res.ToolsRun)+res.ToolsRunOmitted != len(names) {
				t.Fatalf("%d kept + %d omitted, want %d", len(res.ToolsRun), res.ToolsRunOmitted, len(names))
			}
			again := *res
			if err := fitResult(&again, tc.limit); err != nil || len(again.ToolsRun) != len(res.ToolsRun) || again.ToolsRunOmitted != res.ToolsRunOmitted || again.Content != res.Content {
				t.Fatalf("a second fit changed the result (%v)", err)
			}
			for i := range names {
				if names[i] != orig[i] {
					t.Fatal("the caller's list was written to")
				}
			}
		})
	}
}

func last(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}
